// Command frontend is an example OpenAI-style frontend that publishes the
// request and response events hintstream consumes, with client.Publisher.
// Its model and tokenizer are stand-ins (an echo and a byte tokenizer):
// copy the handler, keep your own.
//
//	go run ./examples/frontend --nats-url nats://127.0.0.1:4222 --listen 127.0.0.1:8000
//	curl -H 'x-dynamo-experimental-wakeup: 1' -d '{"model":"Qwen/Qwen3-8B","user":"s-1","messages":[{"role":"user","content":"hi"}]}' 127.0.0.1:8000/v1/chat/completions
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	natsURL := flag.String("nats-url", nats.DefaultURL, "NATS server with hintstream's streams")
	listen := flag.String("listen", "127.0.0.1:8000", "HTTP address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *natsURL, *listen, nil); err != nil {
		fmt.Fprintln(os.Stderr, "frontend:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; ready, when set, gets the bound address.
func run(ctx context.Context, natsURL, listen string, ready func(addr string)) error {
	log := slog.Default()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	pub, err := client.NewPublisher(js)
	if err != nil {
		return err
	}
	h := &Handler{Pub: pub, Model: echoModel{}, Tokenize: byteTokens, Log: log}
	mux := http.NewServeMux()
	mux.Handle("/v1/chat/completions", h)
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return pub.Close(sctx) // every event acked before exit
}

// echoModel stands in for the router and engine: it answers with a tool
// call when the prompt mentions "search", with the prompt's tail
// otherwise, always "served" by worker 1.
type echoModel struct{}

func (echoModel) Complete(_ context.Context, _ string, prompt []uint32) (Completion, error) {
	c := Completion{Text: "ok", TokenIDs: []uint32{1, 2, 3}, FinishReason: "stop", WorkerID: 1}
	if containsWord(prompt, "search") {
		c.FinishReason, c.ToolCalls = "tool_calls", []ToolCall{{Name: "web_search", Arguments: `{"q":"hintstream"}`}}
	}
	return c, nil
}

// byteTokens is a stand-in tokenizer: one token per byte.
func byteTokens(_ string, prompt string) []uint32 {
	out := make([]uint32, len(prompt))
	for i := 0; i < len(prompt); i++ {
		out[i] = uint32(prompt[i])
	}
	return out
}

func containsWord(tokens []uint32, w string) bool {
	b := make([]byte, len(tokens))
	for i, t := range tokens {
		b[i] = byte(t)
	}
	return bytes.Contains(b, []byte(w))
}
