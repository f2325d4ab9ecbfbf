package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"errors"

	"github.com/hintstream/hintstream/emit/receiver"
)

// bindList is a repeatable --bind flag.
type bindList []string

func (b *bindList) String() string     { return strings.Join(*b, ",") }
func (b *bindList) Set(v string) error { *b = append(*b, v); return nil }

// sinkLine is what `hintstream sink` prints per hint, one JSON object a
// line: the envelope's ids and the decoded payload.
type sinkLine struct {
	Endpoint      string `json:"endpoint"`
	MessageID     string `json:"message_id"`
	ActionID      string `json:"action_id"`
	ActionType    string `json:"action_type"`
	ActionVersion string `json:"action_version"`
	Payload       any    `json:"payload"`
}

// sinkCmd binds reference receivers (package receiver) and prints every
// hint they accept: a stand-in for a worker's scheduler or the Mooncake
// master, and a way to watch hints leave a real deployment.
func sinkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("sink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var binds bindList
	fs.Var(&binds, "bind", "endpoint to bind a PULL socket at, e.g. tcp://0.0.0.0:5570 (repeatable; port * picks one)")
	var (
		curveFile = fs.String("curve-secret-key-file", env("HINTSTREAM_SINK_CURVE_SECRET_KEY_FILE", ""),
			"file holding the Z85 CURVE secret key: the sockets become CURVE servers (env HINTSTREAM_SINK_CURVE_SECRET_KEY_FILE)")
		window    = fs.Int("dedup-window", receiver.DefaultDedupWindow, "recent message ids remembered to drop repeats")
		slots     = fs.Int("slot-window", receiver.DefaultSlotWindow, "pin slots whose last revision is remembered: an older pin, renewal or release is dropped (docs/wire.md)")
		workerID  = fs.Uint64("worker-id", 0, "drop prefetches whose worker_id names another worker (0: take every worker's)")
		logFormat = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json")
		logLevel  = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "info"), "debug, info, warn or error")
	)
	usageHeader(fs, "Usage: hintstream sink --bind tcp://HOST:PORT [--bind ...] [flags]\n\n"+
		"Receives hints like a worker or the Mooncake master and prints one JSON line each.")
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(binds) == 0 {
		return fmt.Errorf("--bind is required")
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	opts := []receiver.Option{receiver.WithDedupWindow(*window), receiver.WithSlotWindow(*slots), receiver.WithLogger(log)}
	if *workerID != 0 {
		opts = append(opts, receiver.WithWorkerID(*workerID))
	}
	if *curveFile != "" {
		key, err := os.ReadFile(*curveFile)
		if err != nil {
			return fmt.Errorf("--curve-secret-key-file: %w", err)
		}
		opts = append(opts, receiver.WithCurveServer(strings.TrimSpace(string(key))))
	}
	checked = true
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	print := func(_ context.Context, h receiver.Hint) {
		line := sinkLine{Endpoint: h.Endpoint, MessageID: h.MessageID, ActionID: h.ID,
			ActionType: h.Type, ActionVersion: h.Version}
		switch {
		case h.Prefetch != nil:
			line.Payload = h.Prefetch
		case h.Retain != nil:
			line.Payload = h.Retain
		default:
			line.Payload = h.Pin
		}
		mu.Lock()
		defer mu.Unlock()
		if err := enc.Encode(line); err != nil {
			log.Warn("sink: write", "err", err)
		}
	}
	var rs []*receiver.Receiver
	for _, b := range binds {
		r, err := receiver.New(b, print, opts...)
		if errors.Is(err, receiver.ErrInvalidOption) {
			return asUsage(err) // --dedup-window or --slot-window out of range
		}
		if err != nil {
			return err
		}
		rs = append(rs, r)
		log.Info("sink listening", "endpoint", r.Endpoint(), "curve", *curveFile != "")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = r.Run(ctx); errs[i] != nil {
				cancel() // one socket failing stops the sink
			}
		}()
	}
	wg.Wait()
	err = errors.Join(errs...)
	for _, r := range rs {
		log.Info("sink stopped", "endpoint", r.Endpoint(), countersAttr(r.Counters().LogAttrs()))
	}
	return err
}
