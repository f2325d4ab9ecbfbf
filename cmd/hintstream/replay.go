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
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/replay"
	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/term"
)

// replayCmd runs the decisions over stream history.
func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := streams.DefaultSet()
	var (
		natsURL    = fs.String("nats-url", natsURLEnv(nats.DefaultURL), "NATS server URL"+natsURLUsage)
		since      = fs.String("since", "", "replay requests and responses from this time (RFC 3339, or a duration ago such as 1h)")
		fromSeq    = fs.Uint64("from-seq", 0, "replay from this requests-stream sequence instead of --since")
		until      = fs.String("until", "", "stop after events of this time (RFC 3339 or a duration ago)")
		dryRun     = fs.Bool("dry-run", false, "write the hints to --out instead of sending them")
		out        = fs.String("out", "-", "where a dry run writes its hints, one JSON line each (- = stdout)")
		pinEP      = fs.String("pin-endpoint", env("DYN_KVM_PIN_ENDPOINT", ""), "as in run (env DYN_KVM_PIN_ENDPOINT); empty: no pins")
		bucket     = fs.String("registry-bucket", registry.DefaultBucket, "worker registry bucket (its current entries are used)")
		reqStream  = fs.String("requests-stream", def.Requests.Name, "as in run")
		respStream = fs.String("responses-stream", def.Responses.Name, "as in run")
		kvStream   = fs.String("kv-events-stream", def.KVEvents.Name, "as in run")
		kvSubj     = fs.String("kv-events-subjects", strings.Join(def.KVEvents.Subjects, ","), "as in run")
		loadStream = fs.String("load-stream", def.Load.Name, "as in run")
		logFormat  = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json (env HINTSTREAM_LOG_FORMAT)")
		logLevel   = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "warn"), "debug, info, warn or error (env HINTSTREAM_LOG_LEVEL)")
	)
	natsCfg := natsFlags(fs, "hintstream-replay")
	var decisions engine.Decisions
	decisions.RegisterFlags(fs)      // the decision flags of run
	models := cmdline.ModelsFlag(fs) // run's --models
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: hintstream replay (--since TIME | --from-seq N) [--until TIME] [--dry-run --out FILE] [flags]\n\n"+
			"Replays KV events, load, requests and responses in their original time order, so each choice\n"+
			"equals what a live run made at that moment. The registry is its current content. Give the\n"+
			"decision flags the live run had (--prefetch-ttl, --router-*, --pin-*, --tool-time-*, --max-*, ...).\n\nFlags:\n")
		printFlags(fs)
	}
	applyConfig := configFlag(fs)
	var scope eventplane.Scope
	scope.RegisterFlags(fs)
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if err := applyConfig(); err != nil {
		return err
	}
	if *since == "" && *fromSeq == 0 {
		return fmt.Errorf("one of --since or --from-seq is required")
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	o := replay.Options{Streams: def, FromSeq: *fromSeq, DryRun: *dryRun, RegistryBucket: *bucket,
		PinEndpoint: *pinEP, Logger: log}
	if err := decisions.ApplyFlags(); err != nil {
		return err
	}
	o.Decisions = decisions
	if o.Models, err = models(); err != nil {
		return err
	}
	o.Streams.Requests.Name, o.Streams.Responses.Name, o.Streams.Load.Name = *reqStream, *respStream, *loadStream
	o.Streams.KVEvents.Name, o.Streams.KVEvents.Subjects = *kvStream, split(*kvSubj)
	o.Streams = scope.ApplyGiven(o.Streams) // --dynamo-namespace/--dynamo-component, as in run
	if o.Since, err = parseWhen(*since); err != nil {
		return fmt.Errorf("--since: %w", err)
	}
	if o.Until, err = parseWhen(*until); err != nil {
		return fmt.Errorf("--until: %w", err)
	}
	checked = true
	ncfg := natsCfg()
	ncfg.URL, ncfg.Logger = *natsURL, log
	nc, err := natsconn.Connect(ncfg)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if *dryRun {
		o.Out = stdout
		if *out != "-" {
			f, err := os.Create(*out)
			if err != nil {
				return err
			}
			defer f.Close()
			o.Out = f
		}
	} else {
		pool, err := zmqsend.NewPool(zmqsend.WithLogger(log))
		if err != nil {
			return err
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), service.DefaultShutdownTimeout)
			defer cancel()
			_ = pool.Close(cctx)
		}()
		o.Sender = pool
	}
	if isTerminal(stderr) {
		o.Progress = stderr
	}
	sum, err := replay.Run(ctx, js, o)
	if err != nil {
		return err
	}
	for _, l := range sum.Lines() {
		fmt.Fprintln(stderr, l)
	}
	return nil
}

// parseWhen reads RFC 3339 or a duration before now; "" is the zero time.
func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// isTerminal says w is a terminal: progress bars are drawn there and
// nowhere else, so a pipe, a file or /dev/null gets none.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
