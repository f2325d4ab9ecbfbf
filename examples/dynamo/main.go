// Command dynamo is a stand-in for an unmodified Dynamo deployment, for
// trying `hintstream run --source dynamo` without GPUs (deploy/dynamo,
// docs/dynamo.md). It publishes what Dynamo publishes with configuration
// only, and nothing of hintstream's own schema:
//
//   - the frontend's request-trace records (DYN_REQUEST_TRACE=1,
//     DYN_REQUEST_TRACE_SINKS=nats): request_end of each agent turn, its
//     prompt known by its sequence hashes, every other turn ending in a
//     tool call, and the harness's tool_start/tool_end between, written
//     as Dynamo's serde writes them (internal/dynamotrace);
//   - the workers' KV events for the prompts' blocks, as Dynamo's
//     RouterEvent JSON on kv.events.<worker>;
//
// and it stands for the sockets hintstream sends to: each worker's hint
// socket and the Mooncake master's pin socket are ZeroMQ PULL sockets
// here, which log each hint they receive. The workers are registered in
// hintstream's registry bucket (the part a real deployment does with
// `hintstream register`).
//
//	go run ./examples/dynamo --nats-url nats://127.0.0.1:4222
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"

	"github.com/hintstream/hintstream/internal/dynamotrace"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// Options configure the stand-in.
type Options struct {
	NATSURL       string
	Workers       int
	BindHost      string // where the PULL sockets bind
	AdvertiseHost string // how hintstream reaches them
	HintPort      int    // worker i binds HintPort+i
	PinPort       int
	Interval      time.Duration // between turns
	BlockSize     int
	Model         string
	Subject       string // the request trace's (DYN_REQUEST_TRACE_NATS_SUBJECT)
	Log           *slog.Logger
}

func main() {
	o := Options{Log: slog.New(slog.NewJSONHandler(os.Stderr, nil))}
	flag.StringVar(&o.NATSURL, "nats-url", nats.DefaultURL, "NATS server hintstream reads")
	flag.IntVar(&o.Workers, "workers", 2, "workers")
	flag.StringVar(&o.BindHost, "bind-host", "127.0.0.1", "address the hint and pin sockets bind")
	flag.StringVar(&o.AdvertiseHost, "advertise-host", "127.0.0.1", "host hintstream reaches the sockets at")
	flag.IntVar(&o.HintPort, "hint-port", 5570, "worker i's hint socket port is this plus i")
	flag.IntVar(&o.PinPort, "pin-port", 50052, "the Mooncake master's pin socket port (hintstream run --pin-endpoint)")
	flag.DurationVar(&o.Interval, "interval", 2*time.Second, "time between turns")
	flag.IntVar(&o.BlockSize, "block-size", 16, "the workers' KV block size and the trace's block size")
	flag.StringVar(&o.Model, "model", "Qwen/Qwen3-8B", "served model")
	flag.StringVar(&o.Subject, "subject", dynamotrace.DefaultSubject, "request-trace subject")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, o); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "dynamo stand-in:", err)
		os.Exit(1)
	}
}

// Run registers the workers, binds the sockets and plays agent sessions
// until ctx ends.
func Run(ctx context.Context, o Options) error {
	nc, err := nats.Connect(o.NATSURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		return err
	}
	for i := range o.Workers {
		id := uint64(i + 1)
		if err := listen(ctx, o, fmt.Sprintf("worker %d hint socket", id), o.HintPort+i); err != nil {
			return err
		}
		rec := schemas.WorkerRecord{WorkerID: id, Model: o.Model, KvBlockSize: uint32(o.BlockSize),
			HintEndpoints: []string{"tcp://" + o.AdvertiseHost + ":" + strconv.Itoa(o.HintPort+i)}}
		if err := registry.Put(ctx, kv, rec); err != nil {
			return err
		}
	}
	if err := listen(ctx, o, "Mooncake master pin socket", o.PinPort); err != nil {
		return err
	}
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	events := map[uint64]uint64{} // each worker's last KV event id
	for turn := 0; ; turn++ {
		w := Worker(o, turn)
		events[w]++
		if err := Turn(ctx, js, o, turn, events[w]); err != nil {
			// hintstream creates the streams: until it has, publishes fail.
			o.Log.Warn("turn not published", "turn", turn, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Worker is the worker that serves turn n: its session's.
func Worker(o Options, n int) uint64 { return uint64((n/4)%o.Workers + 1) }

// Turn plays turn n: session n/4 on Worker(n), its prompt grown by each
// earlier turn. The worker's KV event eventID stores the prompt's blocks,
// then the frontend traces the turn's end; even turns end in a tool call,
// which the harness runs before the next.
func Turn(ctx context.Context, js jetstream.JetStream, o Options, n int, eventID uint64) error {
	session := n / 4
	worker := Worker(o, n)
	prompt := make([]uint32, (n%4+1)*4*o.BlockSize+5) // a partial last block, as most prompts end
	for i := range prompt {
		prompt[i] = uint32(session*100000 + i)
	}
	blocks := make([]schemas.StoredBlock, 0, len(prompt)/o.BlockSize)
	for i, h := range kvevents.LocalBlockHashes(prompt, o.BlockSize) {
		// The engine's own block hash: any value of its own.
		blocks = append(blocks, schemas.StoredBlock{BlockHash: schemas.BlockHash(worker<<48 | uint64(session)<<16 | uint64(i)),
			TokensHash: schemas.BlockHash(h)})
	}
	b, err := json.Marshal(schemas.RouterEvent{WorkerID: worker, Event: schemas.KvCacheEvent{EventID: eventID,
		Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{Blocks: blocks}}}})
	if err != nil {
		return err
	}
	if _, err := js.Publish(ctx, streams.KVEventSubject(worker), b); err != nil {
		return err
	}
	now := uint64(time.Now().UnixMilli())
	tr := dynamotrace.Turn{RequestID: fmt.Sprintf("req-%d", n), Session: fmt.Sprintf("session-%d", session),
		Trigger: "user_message", Model: o.Model, Prompt: prompt, BlockSize: o.BlockSize, Worker: worker,
		FinishReason: "stop", ReceivedMs: now - 800, TotalMs: 800, OutputTokens: 40}
	if n%2 == 1 {
		tr.Trigger = "tool_result"
	}
	records := []*dynamotrace.Record{}
	if n%2 == 0 {
		tr.FinishReason, tr.ToolCalls = "tool_calls", []string{"web_search"}
		records = append(records, tr.RequestEnd(),
			dynamotrace.Tool("tool_start", tr.Session, tr.RequestID+"-call", "web_search", now, 0))
	} else {
		records = append(records,
			dynamotrace.Tool("tool_end", tr.Session, fmt.Sprintf("req-%d-call", n-1), "web_search", now-1500, now-200),
			tr.RequestEnd())
	}
	for _, r := range records {
		if err := dynamotrace.Publish(ctx, js, o.Subject, r); err != nil {
			return err
		}
	}
	o.Log.Info("turn traced", "request_id", tr.RequestID, "session", tr.Session, "worker_id", worker,
		"prompt_tokens", len(prompt), "tool_call", n%2 == 0)
	return nil
}

// listen binds a PULL socket on port and logs what arrives until ctx
// ends.
func listen(ctx context.Context, o Options, what string, port int) error {
	s, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		return err
	}
	if err := s.SetRcvtimeo(200 * time.Millisecond); err != nil {
		s.Close()
		return err
	}
	if err := s.Bind("tcp://" + o.BindHost + ":" + strconv.Itoa(port)); err != nil {
		s.Close()
		return fmt.Errorf("%s: %w", what, err)
	}
	go func() {
		defer s.Close()
		for ctx.Err() == nil {
			b, err := s.RecvBytes(0)
			if err != nil {
				continue // the receive timeout: look at ctx again
			}
			var env schemas.KvHintsEnvelope
			if _, err := env.UnmarshalMsg(b); err != nil || len(env.Actions) == 0 {
				o.Log.Warn("undecodable hint", "socket", what, "err", err)
				continue
			}
			a := env.Actions[0]
			attrs := []any{"socket", what, "action", a.ActionType, "message_id", env.MessageID}
			switch a.ActionType {
			case "kv.prefetch":
				var p schemas.PrefetchPayload
				if _, err := p.UnmarshalMsg(a.Payload); err == nil {
					attrs = append(attrs, "request_id", p.RequestID, "block_hashes", len(p.BlockHashes))
				}
			case "kv.pin":
				var p schemas.PinPayload
				if _, err := p.UnmarshalMsg(a.Payload); err == nil {
					attrs = append(attrs, "slot", p.Slot, "ttl_ms", p.TTLMs, "block_hashes", len(p.BlockHashes))
				}
			}
			o.Log.Info("hint received", attrs...)
		}
	}()
	return nil
}
