package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/hintstream/hintstream/ingest/requesttrace"
	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/hintstream/hintstream/whatif"
	"github.com/hintstream/hintstream/whatif/workload"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// whatifCmd answers "what would hints save on this traffic, at these
// capacities" from a trace or the cluster's own streams (package whatif).
func whatifCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("whatif", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := streams.DefaultSet()
	dc := whatif.DefaultCluster()
	var (
		trace       = fs.String("trace", "", "a Mooncake-format JSONL trace (timestamp, input_length, output_length, hash_ids; optional session_id, finish_reason, tool), or Dynamo's request-trace records as its file sink writes them (plain or gzip): the first record tells which")
		gen         = fs.String("workload", "", "play a generated workload instead: "+whatif.WorkloadAgent+" (long-context coding agents) or "+whatif.WorkloadSessions+" (synthetic agentic sessions)")
		seed        = fs.Uint64("seed", 1, "with --workload: the generator's seed")
		toolSignal  = fs.String("tool-signal", workload.DefaultToolSignal, "where a trace says a turn ends in a tool call, its next turn is signalled at the tool's end ("+workload.SignalToolEnd+") or at its predicted end, learned from tool times ("+workload.SignalPredicted+")")
		humanShare  = fs.Float64("human-wakeup-share", workload.DefaultHumanWakeupShare, "where a trace says a turn ends without a tool call, the share of next (human) turns announced by a wake-up (0 … 1)")
		humanLead   = fs.Duration("human-wakeup-lead", workload.DefaultHumanWakeupLead, "how long before a human's turn its wake-up comes (--human-wakeup-share)")
		fromStreams = fs.Bool("from-streams", false, "replay the cluster's recorded requests and responses from JetStream (read-only)")
		since       = fs.String("since", "", "with --from-streams: from this time (RFC 3339, or a duration ago such as 1h)")
		until       = fs.String("until", "", "with --from-streams: up to this time (RFC 3339 or a duration ago; empty: now)")
		natsURL     = fs.String("nats-url", natsURLEnv(nats.DefaultURL), "NATS server URL (--from-streams)"+natsURLUsage)
		bucket      = fs.String("registry-bucket", registry.DefaultBucket, "worker registry bucket: worker count and block size (--from-streams)")
		reqStream   = fs.String("requests-stream", def.Requests.Name, "as in run")
		respStream  = fs.String("responses-stream", def.Responses.Name, "as in run")
		kvStream    = fs.String("kv-events-stream", def.KVEvents.Name, "as in run")
		rtStream    = fs.String("request-trace-stream", requesttrace.DefaultTraceStream, "stream of Dynamo's request-trace records, read too with --from-streams (absent: none)")
		rtSubject   = fs.String("request-trace-subject", requesttrace.DefaultSubject, "as in run")
		kvLookback  = fs.Duration("kv-lookback", whatif.DefaultKVLookback, "with --from-streams: read KV events from this long before --since, to rebuild the workers' device caches for the observed device hit share (0: none)")
		workers     = fs.Int("workers", dc.Workers, "simulated workers (--from-streams: the registry's count unless set)")
		device      = fs.Int("device-blocks", dc.DeviceBlocks, "device KV cache per worker, in blocks")
		bw          = fs.String("l3-bandwidth", fmt.Sprintf("%gGB/s", dc.L3Bandwidth/1e9), "L3 → device link per worker, bytes/s (0: instant loads)")
		alpha       = fs.Float64("alpha", dc.Alpha, "prefill cost of a token loaded from L3 relative to a recomputed one (0 < α ≤ 1)")
		kvBytes     = fs.Int("kv-bytes-per-token", dc.KVBytesPerToken, "KV cache bytes per token (default: run's, Qwen3-8B in bf16)")
		blockSize   = fs.Int("block-size", dc.BlockSize, "tokens per hash_ids block (a Mooncake --trace; a request trace gives its trace_block_size, --from-streams the registry's)")
		sweep       = fs.String("sweep", "", "run at each point of one dimension: l3=1GiB,4GiB,16GiB | device=512,1024 | bandwidth=10GB/s,25GB/s")
		skipBad     = fs.Bool("skip-bad", false, "count bad lines or events and go on (default: stop at the first, naming it)")
		spoolDir    = fs.String("spool-dir", "", "where the run keeps what it reads back as it plays (the trace's requests and events, the bound's tape; removed at the end); default $TMPDIR or /tmp")
		policies    = fs.String("policies", "", "rows to play, by name, separated by commas, from "+whatif.PolicyNames()+" (default: all but "+whatif.OptInPolicyNames()+")")
		asJSON      = fs.Bool("json", false, "write the report as JSON to stdout instead of tables")
		reportDir   = fs.String("report", "", "write an HTML report with SVG charts to this directory (index.html)")
		logFormat   = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json (env HINTSTREAM_LOG_FORMAT)")
		logLevel    = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "warn"), "debug, info, warn or error (env HINTSTREAM_LOG_LEVEL)")
	)
	var l3 int64
	cmdline.BytesVar(fs, &l3, "l3", dc.L3Bytes, "L3 (Mooncake) capacity in bytes")
	natsCfg := natsFlags(fs, "hintstream-whatif")
	usageHeader(fs, "Usage: hintstream whatif (--trace FILE | --workload NAME | --from-streams --since TIME [--until TIME]) [flags]\n\n"+
		"Plays the traffic on a simulated cluster, in virtual time, through hintstream's own decision\n"+
		"engine under every hint policy, and reports the prefill each saves against no hints, the\n"+
		"next-turn oracle, the clairvoyant and hint-reachable bounds, beside the peers an operator may\n"+
		"run instead, what each loses by cause and mechanism, and prefetch bytes wasted.")
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if n := btoi(*trace != "") + btoi(*gen != "") + btoi(*fromStreams); n != 1 {
		return errors.New("give one of --trace FILE, --workload NAME or --from-streams")
	}
	if *gen != "" && *gen != whatif.WorkloadAgent && *gen != whatif.WorkloadSessions {
		return fmt.Errorf("--workload %q: want %s or %s", *gen, whatif.WorkloadAgent, whatif.WorkloadSessions)
	}
	sig := workload.Signals{Tool: *toolSignal, HumanShare: *humanShare, HumanLead: *humanLead}
	if err := sig.Validate(); err != nil || *humanShare < 0 || *humanLead <= 0 {
		return fmt.Errorf("--tool-signal %q, --human-wakeup-share %v, --human-wakeup-lead %v: want %s or %s, 0 … 1, > 0",
			*toolSignal, *humanShare, *humanLead, workload.SignalToolEnd, workload.SignalPredicted)
	}
	if *fromStreams && *since == "" {
		return errors.New("--from-streams needs --since")
	}
	c := dc
	c.Workers, c.DeviceBlocks, c.Alpha, c.KVBytesPerToken, c.BlockSize = *workers, *device, *alpha, *kvBytes, *blockSize
	c.L3Bytes = l3
	if c.L3Bandwidth, err = cmdline.ParseBytesPerSecond(*bw); err != nil {
		return fmt.Errorf("--l3-bandwidth: %w", err)
	}
	o := whatif.Options{}
	if *sweep != "" {
		sw, err := whatif.ParseSweep(*sweep)
		if err != nil {
			return fmt.Errorf("--sweep: %w", err)
		}
		o.Sweep = &sw
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if o.Sweep != nil {
		if err := o.Sweep.Validate(c); err != nil {
			return fmt.Errorf("--sweep: %w", err)
		}
	}
	if *policies != "" {
		if o.Policies, err = whatif.SelectPolicies(*policies); err != nil {
			return err
		}
	}
	if *trace != "" {
		if err := checkTraceFile(*trace); err != nil {
			return err
		}
	}
	if *reportDir != "" {
		// Found now, not after a run of minutes.
		if err := checkReportDir(*reportDir); err != nil {
			return err
		}
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	o.Logger = log
	win := whatif.Window{Streams: def, RegistryBucket: *bucket, SkipBad: *skipBad}
	if *fromStreams {
		win.Streams.Requests.Name, win.Streams.Responses.Name, win.Streams.KVEvents.Name = *reqStream, *respStream, *kvStream
		win.RequestTrace = requesttrace.StreamConfig(*rtSubject)
		win.RequestTrace.Name = *rtStream
		if win.Since, err = parseWhen(*since); err != nil {
			return fmt.Errorf("--since: %w", err)
		}
		if win.Until, err = parseWhen(*until); err != nil {
			return fmt.Errorf("--until: %w", err)
		}
		switch {
		case *kvLookback < 0:
			return fmt.Errorf("--kv-lookback %v: negative", *kvLookback)
		case *kvLookback == 0:
			win.KVLookback = -1
		default:
			win.KVLookback = *kvLookback
		}
	}
	checked = true
	o.Signals = sig
	var src whatif.Source
	if *gen != "" {
		if src, err = whatif.GeneratedSource(*gen, *seed, c.BlockSize, sig); err != nil {
			return err
		}
	} else if *fromStreams {
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
		ss, err := whatif.FromStreams(ctx, js, win)
		if err != nil {
			return err
		}
		src = ss.Source
		c.BlockSize = ss.BlockSize
		if !flagSet(fs, "workers") {
			c.Workers = ss.Workers
		}
	} else {
		f, err := os.Open(*trace)
		if err != nil {
			return err
		}
		// Open to the end: the play reads each request's ids back.
		defer f.Close()
		isRT, head, err := workload.IsRequestTrace(f)
		if err != nil {
			return fmt.Errorf("%s: %w", *trace, err)
		}
		if isRT {
			ts, err := whatif.ReadRequestTrace(head, *trace, *skipBad)
			if err != nil {
				return err
			}
			// The ids are sequence hashes at the trace's block size.
			if flagSet(fs, "block-size") && c.BlockSize != ts.BlockSize {
				return fmt.Errorf("--block-size %d: %s's records are hashed at trace_block_size %d", c.BlockSize, *trace, ts.BlockSize)
			}
			src, c.BlockSize = ts.Source, ts.BlockSize
			if !flagSet(fs, "workers") && ts.Workers > 0 {
				c.Workers = ts.Workers
			}
		} else {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			// Kept on disk and read back as the play goes: memory follows
			// the trace's distinct blocks, not its length.
			if src, err = whatif.SpoolTraceSignals(f, c.BlockSize, *skipBad, *spoolDir, sig); err != nil {
				return fmt.Errorf("%s: %w", *trace, err)
			}
			defer src.Workload.Close()
			src.Name = *trace
		}
	}
	o.Cluster = c
	o.TempDir = *spoolDir
	if isTerminal(stderr) {
		o.Progress = stderr
	}
	rep, err := whatif.Run(ctx, src, o)
	if err != nil {
		return err
	}
	if *reportDir != "" {
		if err := rep.WriteHTML(*reportDir); err != nil {
			return fmt.Errorf("--report %s: %w", *reportDir, err)
		}
	}
	if *asJSON {
		return rep.WriteJSON(stdout)
	}
	return rep.Text(stdout)
}

// checkTraceFile refuses a --trace that is not a regular file: a
// directory would fail at the first read with a bare "is a directory",
// and a pipe cannot be read back as the play goes (SpoolTrace reads each
// request's ids again from its line).
func checkTraceFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	switch {
	case st.IsDir():
		return fmt.Errorf("--trace %s: %w: is a directory, want a JSONL file", path, errNotRegular)
	case !st.Mode().IsRegular():
		return fmt.Errorf("--trace %s: %w (%v): the run reads each line back as it plays", path, errNotRegular, st.Mode().Type())
	}
	return nil
}

var errNotRegular = errors.New("not a regular file")

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkReportDir makes the --report directory and writes and removes a
// file in it: as root, permissions do not stop a write, but a path under
// a regular file (ENOTDIR), a read-only mount (EROFS) or a full disk
// still do.
func checkReportDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	f, err := os.CreateTemp(dir, ".hintstream-whatif-*")
	if err != nil {
		return fmt.Errorf("--report %s: not writable: %w", dir, err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}
