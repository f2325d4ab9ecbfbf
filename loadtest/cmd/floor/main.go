// Command floor is the yardstick of the load test: the minimal JetStream
// consume → ZeroMQ forward program (package loadtest/floor). It prints
// "floor: consuming ..." on stdout once its consumer is up, and stops
// cleanly on SIGINT or SIGTERM.
//
//	floor --nats-url nats://127.0.0.1:4222 --endpoint tcp://127.0.0.1:5570
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hintstream/hintstream/loadtest/floor"
)

func main() {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	var (
		url      = fs.String("nats-url", "nats://127.0.0.1:4222", "NATS server URL")
		subject  = fs.String("subject", "llm.requests.>", "request events subject (filter)")
		stream   = fs.String("stream", "LLM_REQUESTS", "stream holding the requests (created when absent)")
		endpoint = fs.String("endpoint", "", "ZMQ endpoint of the PULL socket every hint is pushed to (required)")
		durable  = fs.String("durable", "floor-requests", "durable pull consumer name")
		ordered  = fs.Bool("ordered", false, "use an ephemeral ordered consumer (no acks) instead of the durable")
		ttl      = fs.Duration("prefetch-ttl", 2*time.Second, "expires_at_ms = received_at_ms + this")
		cpuProf  = fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	)
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "--cpuprofile:", err)
			os.Exit(1)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := floor.Run(ctx, floor.Config{NATSURL: *url, Endpoint: *endpoint, Stream: *stream, Subject: *subject,
		Durable: *durable, Ordered: *ordered, PrefetchTTL: *ttl, Logger: log,
		Ready: func() { fmt.Printf("floor: consuming %s → %s\n", *subject, *endpoint) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1) // no profile for a run that never started
	}
}
