package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/internal/demo"
	"github.com/hintstream/hintstream/registry"
	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/snapshots"
)

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	streamSet := streamSetFlags(fs)
	streamSet = dynamoFlags(fs, streamSet)
	applyConfig := configFlag(fs)
	applyDecisions := decisionFlags(fs) // flags_decisions.go, shared with replay
	applyBounds := boundsFlags(fs)
	applyCluster := clusterFlags(fs)
	applyKVStreams := kvStreamsFlag(fs)
	var (
		natsURL      = fs.String("nats-url", natsURLEnv(""), "NATS server URL"+natsURLUsage+"; empty starts an embedded JetStream server")
		dataDir      = fs.String("data-dir", env("HINTSTREAM_DATA_DIR", service.DefaultEmbeddedDir), "embedded server's JetStream store (env HINTSTREAM_DATA_DIR)")
		port         = fs.Int("embedded-port", 4222, "embedded server's client port on 127.0.0.1; 0 picks a free one")
		demoOn       = fs.Bool("demo", false, "also run simulated workers and a stream of wake-ups, printing the hints they receive")
		demoEvery    = fs.Duration("demo-interval", time.Second, "time between demo requests")
		demoCount    = fs.Int("demo-count", 0, "demo requests to publish; 0 = until stopped")
		bucket       = fs.String("registry-bucket", registry.DefaultBucket, "JetStream KV bucket of the worker registry")
		group        = fs.String("group", env("HINTSTREAM_GROUP", "hintstream"), "consumer group (env HINTSTREAM_GROUP): every member shares the durable consumers <group>-requests and <group>-responses, and keeps its own index")
		durable      = fs.String("requests-durable", "", "durable consumer name for request events (default <group>-requests)")
		deliverAll   = fs.Bool("requests-deliver-all", false, "a newly created requests consumer starts at the stream's beginning instead of its end")
		update       = fs.Bool("update-streams", false, "add missing subjects to existing streams (otherwise a mismatch stops start-up)")
		senderQueue  = fs.Int("sender-queue", zmqsend.DefaultQueueSize, "hints queued per endpoint before new ones are dropped")
		settleDelay  = fs.Duration("sender-settle-delay", zmqsend.DefaultSettleDelay, "ack a trigger this long after ZMQ took its hint, so a crash before ZMQ wrote it out loses no trigger (0: at once)")
		senderHeld   = fs.Int("sender-max-held", zmqsend.DefaultMaxHeld, "triggers one endpoint's waiting hints may keep unacked; past it they are acked when queued, so a slow worker cannot take every --max-ack-pending slot (0: no bound)")
		kvShards     = fs.Int("kv-apply-shards", service.DefaultKVApplyShards, "KV events of different workers applied in parallel on this many goroutines")
		logFormat    = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json (env HINTSTREAM_LOG_FORMAT)")
		logLevel     = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "info"), "debug, info, warn or error (env HINTSTREAM_LOG_LEVEL)")
		pinEndpoint  = fs.String("pin-endpoint", env("DYN_KVM_PIN_ENDPOINT", ""), "Mooncake master's PULL socket for tool-call pins (env DYN_KVM_PIN_ENDPOINT); empty: pins off")
		reqIndexTTL  = fs.Duration("request-index-ttl", service.DefaultRequestIndexTTL, "how long a response may trail its request and still be pinned")
		respDurable  = fs.String("responses-durable", "", "durable consumer name for response events (default <group>-responses)")
		snapEvery    = fs.Duration("snapshot-interval", service.DefaultSnapshotInterval, "save the KV index to the object store this often and at shutdown; start-up loads it and replays only newer KV events; 0: off (none loaded or saved)")
		snapBucket   = fs.String("snapshot-bucket", snapshots.DefaultBucket, "object store bucket of index snapshots")
		ackWait      = fs.Duration("ack-wait", consumers.DefaultAckWait, "how long a member may hold a request or response unacked before another member gets it")
		maxAckPend   = fs.Int("max-ack-pending", consumers.DefaultMaxAckPending, "requests or responses one member may hold unacked")
		httpAddr     = fs.String("http-addr", env("HINTSTREAM_HTTP_ADDR", ""), "serve /metrics, /healthz and /readyz here, e.g. :9090 (env HINTSTREAM_HTTP_ADDR); empty: off")
		pprofOn      = fs.Bool("pprof", false, "also serve /debug/pprof on --http-addr")
		hintsLog     = fs.String("hints-log", "", "append every hint handed to a sender to this file as a JSON line (compare with replay --dry-run)")
		checkOnly    = fs.Bool("check-config", false, "validate the flags and exit without connecting")
		pinCurve     = fs.String("pin-curve-public-key", env("HINTSTREAM_PIN_CURVE_PUBLIC_KEY", ""), "CURVE server key (Z85) of the pin endpoint (env HINTSTREAM_PIN_CURVE_PUBLIC_KEY); empty: plain text (workers give theirs as hint_curve_public_key)")
		curvePublic  = fs.String("curve-public-key", env("HINTSTREAM_CURVE_PUBLIC_KEY", ""), "hintstream's own CURVE public key, Z85 (env HINTSTREAM_CURVE_PUBLIC_KEY); empty: a fresh keypair at start-up")
		curveSecret  = fs.String("curve-secret-key", env("HINTSTREAM_CURVE_SECRET_KEY", ""), "hintstream's own CURVE secret key, Z85 (env HINTSTREAM_CURVE_SECRET_KEY, preferred to the flag)")
		stopDeadline = fs.Duration("shutdown-timeout", service.DefaultShutdownTimeout, "how long shutdown may spend flushing queued hints")
	)
	natsCfg := natsFlags(fs, "hintstream")
	applyAffinity := affinityFlags(fs)
	applyAgents := agentFlags(fs)
	applyPins := pinFlags(fs)
	applyStateBounds := stateBoundFlags(fs) // flags_statebounds.go
	applyConnect := connectFlags(fs)        // flags_connect.go

	// flags_registration.go
	startRegistrations, applyWorkerGrace := registrationFlag(fs), workerGraceFlag(fs)

	applyRetain := retainFlags(fs)       // flags_retain.go
	demoEngineName := demoEngineFlag(fs) // demo_engine.go
	applyRetention := retentionFlags(fs) // flags_retention.go
	applyAhead := aheadFlags(fs)         // flags_ahead.go
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: hintstream run [flags]\n\nFlags (default in brackets):\n")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := applyConfig(); err != nil {
		return err
	}
	if *durable == "" {
		*durable = *group + "-requests"
	}
	if *respDurable == "" {
		*respDurable = *group + "-responses"
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	set, dlqPrefix := streamSet()

	cfg := service.Config{
		NATSURL: *natsURL, EmbeddedDir: *dataDir, EmbeddedPort: *port,
		Streams: set, UpdateStreams: *update,
		RegistryBucket: *bucket, RequestsDurable: *durable, RequestsDeliverAll: *deliverAll,
		DeadLetterPrefix: dlqPrefix, SenderQueue: *senderQueue, SenderMaxHeld: heldOrNone(*senderHeld), SenderSettleDelay: *settleDelay,
		Logger: log,
	}
	if err := applyDecisions(&cfg.Decisions); err != nil {
		return err
	}
	applyRetain(&cfg.Decisions)
	applyAffinity(&cfg)
	if err := applyPins(&cfg); err != nil {
		return err
	}
	if err := applyAgents(&cfg); err != nil {
		return err
	}
	cfg.KVApplyShards = *kvShards
	cfg.PinEndpoint, cfg.ResponsesDurable, cfg.RequestIndexTTL = *pinEndpoint, *respDurable, *reqIndexTTL
	if *settleDelay < 0 {
		return fmt.Errorf("--sender-settle-delay must not be negative, got %v", *settleDelay)
	}
	if *settleDelay == 0 {
		cfg.SenderSettleDelay = service.Immediately // 0 means "at once" on the command line
	}
	cfg.HTTPAddr, cfg.Pprof = *httpAddr, *pprofOn
	cfg.AckWait, cfg.MaxAckPending = *ackWait, *maxAckPend
	cfg.SnapshotInterval, cfg.SnapshotBucket = *snapEvery, *snapBucket
	if *snapEvery < 0 {
		return fmt.Errorf("--snapshot-interval must not be negative, got %v (0: off)", *snapEvery)
	}
	if *snapEvery == 0 {
		cfg.SnapshotInterval = service.Off // 0 means "off" on the command line
	}
	cfg.NATS = natsCfg()
	if err := applyConnect(&cfg); err != nil {
		return err
	}
	cfg.PinCurvePublicKey, cfg.CurveClientPublicKey, cfg.CurveClientSecretKey = *pinCurve, *curvePublic, *curveSecret
	if err := applyRetention(&cfg); err != nil {
		return err
	}
	if err := applyAhead(&cfg); err != nil {
		return err
	}
	if err := applyStateBounds(&cfg); err != nil {
		return err
	}
	if err := applyBounds(&cfg); err != nil {
		return err
	}
	applyKVStreams(&cfg)
	if err := applyCluster(&cfg); err != nil {
		return err
	}
	if err := applyWorkerGrace(&cfg); err != nil {
		return err
	}
	// The one validation of the whole configuration, as Start does it.
	if err := cfg.Defaults().Validate(); err != nil {
		return err
	}
	checked = true
	if *checkOnly {
		fmt.Fprintln(stdout, "hintstream run: configuration ok")
		return nil
	}
	if *hintsLog != "" {
		f, err := os.OpenFile(*hintsLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--hints-log: %w", err)
		}
		defer f.Close()
		cfg.HintsLog = f
	}
	master, err := demoMaster(*demoOn, &cfg.PinEndpoint) // demo_master.go
	if err != nil {
		return err
	}
	svc, err := startService(ctx, cfg, log)
	if err != nil || svc == nil { // nil, nil: stopped while waiting for a permission
		if master != nil {
			master.Close()
		}
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), *stopDeadline)
		defer cancel()
		svc.Stop(sctx)
		var endpoints map[string]zmqsend.EndpointStats
		if p := svc.Pool(); p != nil {
			endpoints = p.Stats()
		}
		log.Info("stopped", stoppedAttrs(svc.Counters.LogAttrs(), endpoints)...) // summary.go
	}()
	waitRegistrations, err := startRegistrations(ctx, svc, log)
	if err != nil {
		return err
	}
	defer waitRegistrations()
	if *natsURL == "" {
		fmt.Fprintf(stdout, "hintstream: embedded JetStream server at %s (store %s)\n", svc.ClientURL(), *dataDir)
	}
	if *demoOn {
		opts := demo.Options{Interval: *demoEvery, Count: *demoCount, Out: stdout, Logger: log,
			Bucket: *bucket, Master: master, Agents: cfg.Agents != nil, Outcomes: newOutcomeLines(svc)}
		if *demoEngineName != "" {
			de, err := startDemoEngine(ctx, *demoEngineName, stdout, log)
			if err != nil {
				return err
			}
			defer de.Close()
			opts.Forward = de.Forward
		}
		d := demo.New(svc.JetStream(), opts)
		errc := make(chan error, 1)
		go func() { errc <- d.Run(ctx) }()
		select {
		case err := <-errc:
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
		case <-ctx.Done():
			<-errc
		}
		return nil
	}
	select {
	case <-ctx.Done():
	case <-svc.Done(): // a part of the service failed
	}
	return svc.Err()
}

// env returns the variable key, or def when it is unset or empty: an
// empty variable (HINTSTREAM_GROUP= in a unit file) must not override the
// config file or the default with nothing.
func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// heldOrNone maps the flag's 0 (no bound) to the config's NoBound.
func heldOrNone(n int) int {
	if n <= 0 {
		return service.NoBound
	}
	return n
}
