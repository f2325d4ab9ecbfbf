package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/hintstream/hintstream/ingest/bridge"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
)

// bridgeCmd republishes one engine's ZMQ KV-event stream to JetStream
// until ctx ends (SIGINT/SIGTERM).
func bridgeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("bridge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := streams.DefaultSet()
	var (
		natsURL    = fs.String("nats-url", natsURLEnv(nats.DefaultURL), "NATS server URL"+natsURLUsage)
		endpoint   = fs.String("zmq-endpoint", "", "the engine's KV-event PUB endpoint, e.g. tcp://engine:5557 (required)")
		replay     = fs.String("replay-endpoint", "", "the engine's ROUTER replay endpoint, e.g. tcp://engine:5558; empty: gaps are counted, not filled")
		workerID   = fs.String("worker-id", "", "worker id, decimal uint64 (required)")
		dpRank     = fs.Uint("dp-rank", 0, "the engine's data parallel rank (pass that rank's own ports)")
		topic      = fs.String("topic", "", "ZMQ topic prefix to subscribe to")
		subject    = fs.String("subject", "", "subject to publish to (default kv.events.<worker-id>)")
		replayFrom = fs.Int64("replay-from", -1, "at start, replay and publish again from this seq; -1: resume after the stream's last batch")
		replayWait = fs.Duration("replay-timeout", bridge.DefaultReplayTimeout, "how long to wait for each replay frame")
		pubWait    = fs.Duration("publish-timeout", bridge.DefaultPublishTimeout, "bound on each JetStream publish attempt (retries follow with backoff)")
		rcvHWM     = fs.Int("receive-hwm", bridge.DefaultReceiveHWM, "live batches the SUB socket queues while the bridge publishes or replays; past it ZMQ drops (seen as a gap)")
		maxReplay  = fs.Int("max-replay", bridge.DefaultMaxReplay, "most batches one replay may return; a longer replay fails and its gap counts as lost")
		kvStream   = fs.String("kv-events-stream", def.KVEvents.Name, "stream of KV events, created when absent")
		kvSubj     = fs.String("kv-events-subjects", strings.Join(def.KVEvents.Subjects, ","), "subjects of the KV-events stream")
		update     = fs.Bool("update-streams", false, "add missing subjects to an existing stream (otherwise a mismatch stops start-up)")
		logFormat  = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json (env HINTSTREAM_LOG_FORMAT)")
		logLevel   = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "info"), "debug, info, warn or error (env HINTSTREAM_LOG_LEVEL)")
	)
	agentFlags := registerAgentBridgeFlags(fs)
	dynFlags := registerEventPlaneBridgeFlags(fs)
	natsCfg := natsFlags(fs, "hintstream-bridge")
	connectTimeout := connectTimeoutFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: hintstream bridge --zmq-endpoint tcp://... --worker-id N [flags]\n"+
			"       hintstream bridge --agent-events tcp://... [--agent-events tcp://...] [flags]\n"+
			"       hintstream bridge --dynamo-zmq tcp://... [--dynamo-zmq tcp://...] [--dynamo-namespace NS] [flags]\n\n"+
			"Republishes an engine's ZMQ KV events to JetStream kv.events.<worker-id>,\n"+
			"agent harnesses' tool events to agent.events.<workflow>, and Dynamo's ZMQ\n"+
			"event plane (KV events, load, router request starts) to the subjects its NATS\n"+
			"transport would use.\n\nFlags (default in brackets):\n")
		printFlags(fs)
	}
	applyConfig := configFlag(fs)
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if err := applyConfig(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	kvBridge := *endpoint != "" || *workerID != "" || len(agentFlags.endpoints) == 0 && !dynFlags.given()
	if kvBridge && (*endpoint == "" || *workerID == "") {
		return errors.New("--zmq-endpoint and --worker-id are required (unless only --agent-events or --dynamo-zmq is given)")
	}
	var id uint64
	if kvBridge {
		var err error
		if id, err = strconv.ParseUint(*workerID, 10, 64); err != nil {
			return fmt.Errorf("--worker-id %q: want a decimal uint64", *workerID)
		}
	}
	if *dpRank > 1<<32-1 {
		return fmt.Errorf("--dp-rank %d: out of range", *dpRank)
	}
	if *replayFrom < -1 {
		return fmt.Errorf("--replay-from %d: want a seq >= 0, or -1", *replayFrom)
	}
	switch {
	case *replayWait <= 0:
		return fmt.Errorf("--replay-timeout must be positive, got %v", *replayWait)
	case *pubWait <= 0:
		return fmt.Errorf("--publish-timeout must be positive, got %v", *pubWait)
	case *rcvHWM < 1:
		return fmt.Errorf("--receive-hwm must be at least 1, got %d", *rcvHWM)
	case *maxReplay < 1:
		return fmt.Errorf("--max-replay must be at least 1, got %d", *maxReplay)
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	ct, err := connectTimeout()
	if err != nil {
		return err
	}
	checked = true

	nc, js, err := dialBus(ctx, natsCfg(), *natsURL, log, ct)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *natsURL, err)
	}
	defer nc.Close()
	cfg := def.KVEvents
	cfg.Name, cfg.Subjects = *kvStream, split(*kvSubj)
	opts := []bridge.Option{bridge.WithLogger(log), bridge.WithReplayTimeout(*replayWait),
		bridge.WithPublishTimeout(*pubWait), bridge.WithReceiveHWM(*rcvHWM), bridge.WithMaxReplay(*maxReplay)}

	// The agent and Dynamo bridges run beside the engine KV bridge, or
	// alone; the first error of any ends them all.
	var side []func(context.Context) error
	if len(agentFlags.endpoints) > 0 {
		side = append(side, func(ctx context.Context) error { return runAgentBridge(ctx, js, agentFlags, *update, log) })
	}
	if dynFlags.given() {
		epOpts := slices.Clone(opts) // the KV bridge appends to opts below
		side = append(side, func(ctx context.Context) error {
			return runEventPlaneBridge(ctx, js, dynFlags, cfg, *update, epOpts, log)
		})
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sideDone := make(chan error, len(side))
	for _, run := range side {
		go func() {
			err := run(sctx)
			if err != nil {
				cancel()
			}
			sideDone <- err
		}()
	}
	defer func() {
		cancel()
		for range side {
			if serr := <-sideDone; err == nil {
				err = serr
			}
		}
	}()
	if !kvBridge {
		<-sctx.Done()
		return nil
	}
	if _, _, err := streams.Ensure(ctx, js, cfg, streams.WithUpdate(*update), streams.WithLogger(log)); err != nil {
		return err
	}
	if *replayFrom >= 0 {
		opts = append(opts, bridge.WithReplayFrom(uint64(*replayFrom)))
	}
	b := bridge.New(js, bridge.Config{
		Endpoint: *endpoint, Topic: *topic, ReplayEndpoint: *replay,
		WorkerID: id, DpRank: uint32(*dpRank), Subject: *subject,
	}, opts...)
	err = b.Run(sctx)
	log.Info("stopped", "stats", b.Stats())
	return err
}
