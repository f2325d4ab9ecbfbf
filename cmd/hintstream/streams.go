package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// streamsDynamoHelp is printed by --help: attaching to Dynamo's own
// durable KV-event stream is the commonest reason to run this command.
const streamsDynamoHelp = `
Dynamo's durable KV events: a Dynamo worker without a local indexer
publishes RouterEvent JSON to JetStream stream
namespace-{ns}-component-{comp}-kv-events, subject <stream>.queue; the stream
captures <stream>.* and keeps 10 minutes. For namespace "dynamo", component
"backend", attach hintstream to it (here and in "run") with:

  --kv-events-stream namespace-dynamo-component-backend-kv-events \
  --kv-events-subjects 'namespace-dynamo-component-backend-kv-events.*'

"check" then reports its max_age as a difference (exit status 0): hintstream
never changes a stream it did not create.

Dynamo's event plane with DYN_EVENT_PLANE=nats is a plain core-NATS
publish per event; have the KV-events and load streams capture it (here
and in "run") with the flags below (add --dynamo-active-sequences for the
routers' request starts in the request stream). Its ZMQ transport,
Dynamo's default, reaches the same subjects through
"hintstream bridge --dynamo-zmq".

  --dynamo-namespace dynamo --dynamo-component backend
`

// streamsCmd creates, checks or describes the streams hintstream uses.
// check returns an error (exit status 1) when a stream is absent or does
// not capture the configured subjects, so it can gate a deploy.
func streamsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	action, explicit := "check", false
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		action, args, explicit = args[0], args[1:], true
	}
	fs := flag.NewFlagSet("streams", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var streamCfg service.Config // its stream flags alone (service/flags_streams.go)
	streamCfg.RegisterStreamFlags(fs)
	var (
		natsURL   = fs.String("nats-url", natsURLEnv(nats.DefaultURL), "NATS server URL"+natsURLUsage)
		update    = fs.Bool("update-streams", false, "create: add missing subjects to existing streams (otherwise a mismatch fails)")
		jsonOut   = fs.Bool("json", false, "print one JSON document instead of a table")
		strict    = fs.Bool("strict", false, "check: also fail when other settings (max_age, storage, replicas, duplicates) differ")
		timeout   = fs.Duration("timeout", 10*time.Second, "time allowed for the whole command")
		logFormat = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json (env HINTSTREAM_LOG_FORMAT)")
		logLevel  = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "info"), "debug, info, warn or error (env HINTSTREAM_LOG_LEVEL)")
	)
	natsCfg := natsFlags(fs, "hintstream-streams")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: hintstream streams [create|check|describe] [flags]\n\n"+
			"  create    create absent streams, attach to present ones (changed only with --update-streams)\n"+
			"  check     (default) change nothing; exit status 1 if a stream is absent or misses a subject\n"+
			"  describe  configuration and state of each stream and its consumers\n"+
			"%s\nFlags (default in brackets):\n", streamsDynamoHelp)
		printFlags(fs)
	}
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if !explicit && fs.NArg() > 0 {
		// "hintstream streams --json describe": the action after flags.
		action, explicit = fs.Arg(0), true
		if err := parseArgs(fs, fs.Args()[1:], stdout, stderr); err != nil {
			return err
		}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if action != "create" && action != "check" && action != "describe" {
		return fmt.Errorf("unknown action %q: want create, check or describe", action)
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	if err := streamCfg.ApplyFlags(); err != nil {
		return err
	}
	set := streamCfg.Streams

	ncfg := natsCfg()
	ncfg.URL, ncfg.Logger = *natsURL, log
	if err := ncfg.Validate(); err != nil {
		return err
	}
	checked = true
	nc, err := natsconn.Connect(ncfg)
	if err != nil {
		return fmt.Errorf("connect to NATS: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	switch action {
	case "create":
		return streamsCreate(ctx, js, set, streams.WithUpdate(*update), streams.WithLogger(log), *jsonOut, stdout)
	case "describe":
		return streamsDescribe(ctx, js, set, *jsonOut, stdout)
	}
	return streamsCheck(ctx, js, set, *strict, *jsonOut, stdout)
}

// roleConfigs pairs each named stream of s with its role, in EnsureSet's
// order.
func roleConfigs(s streams.Set) (roles []string, cfgs []streams.Config) {
	all := []streams.Config{s.Requests, s.Responses, s.KVEvents, s.Load, s.DeadLetter}
	names := []string{"requests", "responses", "kv-events", "load", "dead-letter"}
	for i, c := range all {
		if c.Name != "" {
			roles, cfgs = append(roles, names[i]), append(cfgs, c)
		}
	}
	return roles, cfgs
}

type createLine struct {
	Role     string   `json:"role"`
	Name     string   `json:"name"`
	Outcome  string   `json:"outcome"` // created, attached, updated or failed
	Subjects []string `json:"subjects"`
}

func streamsCreate(ctx context.Context, js jetstream.JetStream, set streams.Set, update, logger streams.EnsureOption, jsonOut bool, w io.Writer) error {
	outcomes, err := streams.EnsureSet(ctx, js, set, update, logger)
	roles, cfgs := roleConfigs(set)
	lines := make([]createLine, len(cfgs))
	for i, c := range cfgs {
		oc := "failed"
		if o, ok := outcomes[c.Name]; ok {
			oc = o.String()
		}
		lines[i] = createLine{Role: roles[i], Name: c.Name, Outcome: oc, Subjects: c.Subjects}
	}
	if jsonOut {
		doc := struct {
			Streams []createLine `json:"streams"`
			Error   string       `json:"error,omitempty"`
		}{Streams: lines}
		if err != nil {
			doc.Error = err.Error()
		}
		if werr := writeJSON(w, doc); werr != nil {
			return werr
		}
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Role, l.Name, l.Outcome, strings.Join(l.Subjects, ","))
	}
	if ferr := tw.Flush(); ferr != nil {
		return ferr
	}
	return err
}

// errStreamsNotReady is the error of a failed check; its message names the
// streams so the exit is self-explaining in deploy logs.
var errStreamsNotReady = errors.New("streams not ready")

func streamsCheck(ctx context.Context, js jetstream.JetStream, set streams.Set, strict, jsonOut bool, w io.Writer) error {
	reports, err := streams.CheckSet(ctx, js, set)
	if err != nil {
		return err
	}
	var bad []string
	for _, r := range reports {
		if !r.OK() || (strict && len(r.Differences) > 0) {
			bad = append(bad, fmt.Sprintf("%s %s", r.Name, r.Status()))
		}
	}
	if jsonOut {
		doc := struct {
			OK      bool             `json:"ok"`
			Streams []streams.Report `json:"streams"`
		}{OK: len(bad) == 0, Streams: reports}
		if err := writeJSON(w, doc); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, r := range reports {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Role, r.Name, r.Status(), strings.Join(r.Subjects, ","))
			if len(r.Missing) > 0 {
				fmt.Fprintf(tw, "\t\t\tstream captures %s, not %s\n", strings.Join(r.HaveSubjects, ","), strings.Join(r.Missing, ","))
			}
			for _, d := range r.Differences {
				fmt.Fprintf(tw, "\t\t\t%s\n", d)
			}
			if len(r.CapturedBy) > 0 {
				fmt.Fprintf(tw, "\t\t\tsubjects already captured by %s (configure that name to attach)\n", strings.Join(r.CapturedBy, ","))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", errStreamsNotReady, strings.Join(bad, "; "))
	}
	return nil
}

type describeDoc struct {
	Role string `json:"role"`
	streams.Description
	Present bool `json:"present"`
}

func streamsDescribe(ctx context.Context, js jetstream.JetStream, set streams.Set, jsonOut bool, w io.Writer) error {
	roles, cfgs := roleConfigs(set)
	var docs []describeDoc
	seen := map[string]bool{}
	for i, c := range cfgs {
		if seen[c.Name] {
			continue // two roles on one stream: describe it once
		}
		seen[c.Name] = true
		d, err := streams.Describe(ctx, js, c.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			docs = append(docs, describeDoc{Role: roles[i], Description: streams.Description{Name: c.Name}})
		case err != nil:
			return err
		default:
			docs = append(docs, describeDoc{Role: roles[i], Description: d, Present: true})
		}
	}
	if jsonOut {
		return writeJSON(w, struct {
			Streams []describeDoc `json:"streams"`
		}{docs})
	}
	for _, d := range docs {
		if !d.Present {
			fmt.Fprintf(w, "%s (%s): absent\n\n", d.Name, d.Role)
			continue
		}
		fmt.Fprintf(w, "%s (%s): subjects %s\n", d.Name, d.Role, strings.Join(d.Subjects, ","))
		fmt.Fprintf(w, "  config: storage %s, replicas %d, retention %s, max_age %s, max_bytes %s, max_msgs %s, duplicates %s, %s\n",
			d.Storage, d.Replicas, d.Retention, limitDur(d.MaxAge), limitInt(d.MaxBytes), limitInt(d.MaxMsgs), d.Duplicates, owner(d.CreatedByHintstream))
		fmt.Fprintf(w, "  state: %d messages, %d bytes, first seq %d (%s), last seq %d (%s), %d consumers\n",
			d.Messages, d.Bytes, d.FirstSeq, stamp(d.FirstTime), d.LastSeq, stamp(d.LastTime), d.ConsumerCount)
		if len(d.Consumers) > 0 {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  consumer\tdurable\tack\tpending\tack pending\tredelivered\tfilter")
			for _, c := range d.Consumers {
				fmt.Fprintf(tw, "  %s\t%t\t%s\t%d\t%d\t%d\t%s\n", c.Name, c.Durable, c.AckPolicy,
					c.Pending, c.AckPending, c.Redelivered, strings.Join(c.FilterSubjects, ","))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		for _, subj := range slices.Sorted(maps.Keys(d.Unconsumed)) {
			fmt.Fprintf(w, "  unconsumed: %d messages on %s match no durable consumer (no group reads them)\n", d.Unconsumed[subj], subj)
		}
		fmt.Fprintln(w)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func limitDur(d time.Duration) string {
	if d <= 0 {
		return "unlimited"
	}
	return d.String()
}

func limitInt(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// owner says whether hintstream created the stream (and so may purge it).
func owner(ours bool) string {
	if ours {
		return "created by hintstream"
	}
	return "not created by hintstream (never purged)"
}
