package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hintstream/hintstream/emit/adapter"
	"github.com/hintstream/hintstream/emit/receiver"
	"github.com/hintstream/hintstream/internal/cmdline"
)

// optInt64 is an int64 flag that may be left unset.
type optInt64 struct{ v *int64 }

func (o *optInt64) String() string {
	if o == nil || o.v == nil {
		return ""
	}
	return strconv.FormatInt(*o.v, 10)
}

func (o *optInt64) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return err
	}
	o.v = &v
	return nil
}

// adapterCmd runs the worker-side sidecar (package adapter): it binds
// the worker's hint socket and turns hints into calls on the engine's
// HTTP API, the Dynamo frontend or LMCache (--prefetch-target).
func adapterCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("adapter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var prio optInt64
	var (
		bind        = fs.String("bind", env("HINTSTREAM_ADAPTER_BIND", ""), "endpoint to bind the hint PULL socket at: the worker's hint_endpoints entry, e.g. tcp://0.0.0.0:5570 (env HINTSTREAM_ADAPTER_BIND)")
		engine      = fs.String("engine", env("HINTSTREAM_ADAPTER_ENGINE", ""), "the engine behind the adapter: sglang or vllm; required for --prefetch-target engine, and where retains go (env HINTSTREAM_ADAPTER_ENGINE)")
		engineURL   = fs.String("engine-url", env("HINTSTREAM_ADAPTER_ENGINE_URL", ""), "the engine's HTTP base URL, e.g. http://127.0.0.1:30000 (env HINTSTREAM_ADAPTER_ENGINE_URL)")
		target      = fs.String("prefetch-target", env("HINTSTREAM_ADAPTER_PREFETCH_TARGET", adapter.DefaultPrefetchTarget), "what a prefetch becomes: "+adapter.TargetEngine+" (a one-token warm-up on --engine-url), "+adapter.TargetDynamo+" (a one-token warm-up through the Dynamo frontend at --frontend-url, routed to the hint's worker) or "+adapter.TargetLMCache+" (LMCache's /l2/prefetch at --lmcache-url) (env HINTSTREAM_ADAPTER_PREFETCH_TARGET)")
		frontendURL = fs.String("frontend-url", env("HINTSTREAM_ADAPTER_FRONTEND_URL", ""), "the Dynamo frontend's HTTP base URL, e.g. http://dynamo-frontend:8000 (env HINTSTREAM_ADAPTER_FRONTEND_URL)")
		lmcacheURL  = fs.String("lmcache-url", env("HINTSTREAM_ADAPTER_LMCACHE_URL", ""), "the HTTP base URL of LMCache's multi-process server on this node (env HINTSTREAM_ADAPTER_LMCACHE_URL)")
		worldSize   = fs.Int("lmcache-world-size", adapter.DefaultLMCacheWorldSize, "world_size of LMCache prefetches: the engine's tensor-parallel size, under which LMCache registered the model's KV layout")
		model       = fs.String("model", "", "served model name when a hint names none (vLLM, the Dynamo frontend and LMCache need one)")
		maxInflight = fs.Int("max-inflight", adapter.DefaultMaxInflight, "concurrent engine calls at most")
		queueSize   = fs.Int("queue-size", adapter.DefaultCallQueueSize, "hints waiting for a call at most; past it they are dropped (queue_full), never blocking the socket")
		callTimeout = fs.Duration("call-timeout", adapter.DefaultCallTimeout, "bound of one engine call; a timed-out call is not retried")
		prefetchTTL = fs.Duration("prefetch-ttl", adapter.DefaultPriorityTTL, "vLLM: how long a prefetched prefix keeps its raised eviction priority (expected time until the turn)")
		prefetchVal = fs.Int64("prefetch-priority", adapter.DefaultPrefetchValue, "vLLM: the vllm.set_priority value of a prefetched prefix (>= 1; unclaimed blocks have 0)")
		window      = fs.Int("dedup-window", receiver.DefaultDedupWindow, "recent message ids remembered to drop repeats")
		workerID    = fs.Uint64("worker-id", 0, "this worker's registry id: prefetches naming another worker are dropped (other_worker); 0: take every worker's")
		queueTokens = fs.Int("queue-tokens", adapter.DefaultQueueTokens, "prompt tokens of the hints queued or in flight at most (4 bytes each); past it hints are dropped (queue_full)")
		maxLife     = fs.Duration("max-hint-life", adapter.DefaultMaxHintLife, "a hint expiring later than this after it arrives is acted on as if it expired then (a sender's clock gone wrong would otherwise keep retries going and set a vLLM TTL as long)")
		curveFile   = fs.String("curve-secret-key-file", env("HINTSTREAM_ADAPTER_CURVE_SECRET_KEY_FILE", ""), "file holding the Z85 CURVE secret key: the socket becomes a CURVE server (env HINTSTREAM_ADAPTER_CURVE_SECRET_KEY_FILE)")
		httpAddr    = fs.String("http-addr", env("HINTSTREAM_HTTP_ADDR", ""), "serve /metrics, /healthz and /readyz here, e.g. :9091 (env HINTSTREAM_HTTP_ADDR); empty: off")
		logFormat   = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json")
		logLevel    = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "info"), "debug, info, warn or error")
	)
	var maxMsg int
	cmdline.BytesVar(fs, &maxMsg, "max-message-bytes", adapter.DefaultMaxMessageBytes, "largest hint message read; a sender of a larger one is disconnected by ZeroMQ")
	fs.Var(&prio, "engine-priority", "scheduling priority sent with every warm-up: the lowest the engine's policy offers "+
		"(vLLM --scheduling-policy priority: a large value; SGLang --enable-priority-scheduling: the low end); unset: none sent")
	usageHeader(fs, "Usage: hintstream adapter --bind tcp://HOST:PORT --engine sglang|vllm --engine-url URL [flags]\n"+
		"       hintstream adapter --bind tcp://HOST:PORT --prefetch-target dynamo --frontend-url URL [flags]\n"+
		"       hintstream adapter --bind tcp://HOST:PORT --prefetch-target lmcache --lmcache-url URL [flags]\n\n"+
		"Binds a hint socket and acts on kv.prefetch and hintstream.retain through APIs that exist upstream:\n"+
		"a prefetch becomes a one-token warm-up on the engine (vLLM: with a vllm.set_priority claim) or\n"+
		"through the Dynamo frontend, or an LMCache /l2/prefetch; a retain, a warm-up on vLLM.")
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case *bind == "":
		return fmt.Errorf("--bind is required")
	case *target == adapter.TargetEngine && (*engine == "" || *engineURL == ""):
		return fmt.Errorf("--engine and --engine-url are required with --prefetch-target %s", adapter.TargetEngine)
	case *target == adapter.TargetDynamo && *frontendURL == "":
		return fmt.Errorf("--frontend-url is required with --prefetch-target %s", adapter.TargetDynamo)
	case *target == adapter.TargetLMCache && *lmcacheURL == "":
		return fmt.Errorf("--lmcache-url is required with --prefetch-target %s", adapter.TargetLMCache)
	case (*engine == "") != (*engineURL == ""):
		return fmt.Errorf("--engine and --engine-url go together")
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	cfg := adapter.Config{Bind: *bind, Engine: *engine, EngineURL: *engineURL, Model: *model,
		PrefetchTarget: *target, FrontendURL: *frontendURL, LMCacheURL: *lmcacheURL, LMCacheWorldSize: *worldSize,
		MaxInflight: *maxInflight, QueueSize: *queueSize, CallTimeout: *callTimeout, PrefetchTTL: *prefetchTTL,
		PrefetchValue: *prefetchVal, EnginePriority: prio.v, DedupWindow: *window, WorkerID: *workerID,
		QueueTokens: *queueTokens, MaxMessageBytes: maxMsg, MaxHintLife: *maxLife}
	if *curveFile != "" {
		key, err := os.ReadFile(*curveFile)
		if err != nil {
			return fmt.Errorf("--curve-secret-key-file: %w", err)
		}
		cfg.CurveSecretKey = strings.TrimSpace(string(key))
	}
	a, err := adapter.New(cfg, adapter.WithLogger(log))
	if errors.Is(err, adapter.ErrInvalidOption) {
		return err // a usage error: flags out of range
	}
	checked = true
	if err != nil {
		return err
	}
	if *httpAddr != "" {
		h, err := a.Handler()
		if err != nil {
			a.Close()
			return err
		}
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			a.Close()
			return fmt.Errorf("--http-addr: %w", err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		log.Info("adapter serving http", "addr", ln.Addr().String())
	}
	log.Info("adapter listening", "endpoint", a.Endpoint(), "prefetch_target", *target, "engine", *engine, "engine_url", *engineURL,
		"frontend_url", *frontendURL, "lmcache_url", *lmcacheURL, "max_inflight", cfg.MaxInflight)
	err = a.Run(ctx)
	log.Info("adapter stopped", "endpoint", a.Endpoint(),
		countersAttr(append(a.Counters().LogAttrs(), a.ReceiverCounters().LogAttrs()...)))
	return err
}
