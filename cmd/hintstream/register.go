package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/nats-io/nats.go"
)

// registerCmd is the per-worker sidecar: it builds the worker's registry
// record from flags and, with --sglang-url, from SGLang's HTTP API (served
// model, page size, L3 object layout), and refreshes it every --interval
// with a TTL of three intervals (client.Register). Killed, it stops
// refreshing and the worker leaves hintstream's choice within three
// intervals; stopped by a signal, it deletes the record at once.
func registerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("register", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var endpoints bindList
	fs.Var(&endpoints, "hint-endpoint", "the worker's hint PULL socket, once per dp rank in rank order (required)")
	var (
		natsURL   = fs.String("nats-url", natsURLEnv(nats.DefaultURL), "NATS server URL"+natsURLUsage)
		workerID  = fs.Uint64("worker-id", 0, "the worker's id, as in its KV events (required)")
		model     = fs.String("model", "", "model name as frontends publish it (default: SGLang's served_model_name)")
		blockSize = fs.Uint("kv-block-size", 0, "KV block size of the worker's KV events (default: SGLang's page_size)")
		curveKey  = fs.String("hint-curve-public-key", "", "Z85 CURVE public key of the hint sockets (empty: plain text)")
		sglangURL = fs.String("sglang-url", "", "SGLang HTTP server, e.g. http://127.0.0.1:30000 (empty: flags only)")
		interval  = fs.Duration("interval", client.DefaultRegisterInterval, "refresh interval; the record expires 3 intervals after the last refresh")
		bucket    = fs.String("registry-bucket", registry.DefaultBucket, "JetStream KV bucket of the worker registry")
		keep      = fs.Bool("keep-on-exit", false, "leave the record at a graceful stop (it then expires on its own)")
		logFormat = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json")
		logLevel  = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "info"), "debug, info, warn or error")
		checkOnly = fs.Bool("check-config", false, "validate the flags (and one record, when it needs no SGLang) and exit")
		via       = fs.Bool("via-hintstream", false, "ask a hintstream member to store the record (on "+registry.DefaultRegisterPrefix+".<worker id>) instead of writing the bucket: a least-privilege worker user has no right on the bucket (see hintstream nats-config)")
		staleMax  = fs.Duration("stale-max", client.DefaultStaleMax, "while the SGLang API fails, keep refreshing the last record read for this long after the last good read (0: never)")
	)
	natsCfg := natsFlags(fs, "hintstream-register")
	usageHeader(fs, "Usage: hintstream register --worker-id N --hint-endpoint tcp://... [--sglang-url URL | --model M --kv-block-size B] [flags]\n\n"+
		"Keeps a worker's registry record alive (a sidecar); stopped by a signal, it deletes the record.")
	connectTimeout := connectTimeoutFlag(fs)
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case *workerID == 0 && !flagSet(fs, "worker-id"):
		return fmt.Errorf("--worker-id is required")
	case len(endpoints) == 0:
		return fmt.Errorf("--hint-endpoint is required")
	case *sglangURL == "" && (*model == "" || *blockSize == 0):
		return fmt.Errorf("without --sglang-url, --model and --kv-block-size are required")
	case *interval < client.MinRegisterInterval:
		return fmt.Errorf("--interval %v: want at least %v", *interval, client.MinRegisterInterval)
	case *staleMax < 0:
		return fmt.Errorf("--stale-max %v must not be negative (0: never)", *staleMax)
	case *blockSize > 1<<31:
		return fmt.Errorf("--kv-block-size %d is too large", *blockSize)
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	base := schemas.WorkerRecord{WorkerID: *workerID, Model: *model, KvBlockSize: uint32(*blockSize),
		HintEndpoints: endpoints, HintCurvePublicKey: *curveKey}
	rec := func(context.Context) (schemas.WorkerRecord, error) { return base, nil }
	if *sglangURL != "" {
		s := &client.SGLang{BaseURL: *sglangURL, Base: base, HTTP: &http.Client{Timeout: *interval, CheckRedirect: client.SameHostRedirects}}
		rec = s.Record
	} else if err := base.Validate(); err != nil {
		return err
	}
	ct, err := connectTimeout()
	if err != nil {
		return err
	}
	checked = true
	if *checkOnly {
		fmt.Fprintln(stdout, "hintstream register: configuration ok")
		return nil
	}
	nc, js, err := dialBus(ctx, workerNATS(fs, natsCfg(), *workerID), *natsURL, log, ct)
	if err != nil {
		return err
	}
	defer nc.Close()
	log.Info("registering", "worker_id", *workerID, "interval", *interval, "ttl", client.TTLIntervals**interval, "sglang", *sglangURL)
	opts := []client.RegisterOption{client.WithInterval(*interval), client.WithBucket(*bucket),
		client.WithLogger(log), client.WithKeepOnExit(*keep), client.WithStaleMax(*staleMax)}
	if *via {
		opts = append(opts, client.WithVia(nc, ""))
	}
	return client.Register(ctx, js, rec, opts...)
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// workerNATS gives a worker's connection its own reply inboxes,
// natsconn.WorkerInboxPrefix + ".<id>", unless --nats-inbox-prefix or its
// variable chose others: a least-privilege server lets worker N subscribe
// to "_INBOX_worker.N.>" only (see hintstream nats-config).
func workerNATS(fs *flag.FlagSet, c natsconn.Config, id uint64) natsconn.Config {
	if !flagSet(fs, "nats-inbox-prefix") && os.Getenv("HINTSTREAM_NATS_INBOX_PREFIX") == "" {
		c.InboxPrefix = natsconn.WorkerInboxPrefix + "." + registry.Key(id)
	}
	return c
}
