// Command hintstream turns LLM request, response and KV-cache events on a
// NATS JetStream bus into KV-cache hints sent over ZeroMQ.
//
//	hintstream run [--nats-url URL] [flags]   the stream processor
//	hintstream run --demo                     the same, plus simulated workers and traffic
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const usage = `hintstream: KV-cache hints from a NATS JetStream bus.

Usage:
  hintstream run [flags]     consume events and send hints (embedded JetStream without --nats-url)
  hintstream replay [flags]  run the decisions over stream history (--dry-run writes the hints)
  hintstream whatif [flags]  what hints would save on a trace or the streams' history, at given capacities
  hintstream bridge [flags]  republish an engine's ZMQ KV events to JetStream kv.events.<worker-id>
  hintstream demo [flags]    a simulated cluster (workers, KV events, load, wake-ups) on an existing bus
  hintstream streams ACTION  create, check (default; exit 1 if not ready) or describe the JetStream streams
  hintstream inspect WHAT    ask a running instance (--http-addr) about workers, index, overlap or tooltime
  hintstream register [flags] keep a worker's registry record alive (a sidecar; reads SGLang's HTTP API)
  hintstream nats-config     print a least-privilege nats-server config (--workers 1,2: one user per worker)
  hintstream sink --bind EP  receive hints like a worker or the Mooncake master and print one JSON line each
  hintstream adapter [flags] act on a worker's hints through SGLang's or vLLM's HTTP API (a sidecar)
  hintstream healthcheck     exit 0 when a running instance's /readyz answers 200 (the container's HEALTHCHECK)
  hintstream version         the module version and VCS revision (also --version)
  hintstream help            this text

Run "hintstream <command> --help" for a command's flags ("--help-all" for
every one, where --help shows those most often set). Exit status: 0 on
success (and --help), 1 when the command failed, 2 for a command line
that cannot run (unknown command or flag, a bad or missing value).
`

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "run":
		err = runCmd(ctx, args[1:], stdout, stderr)
	case "demo":
		err = demoCmd(ctx, args[1:], stdout, stderr)
	case "replay":
		err = replayCmd(ctx, args[1:], stdout, stderr)
	case "whatif":
		err = whatifCmd(ctx, args[1:], stdout, stderr)
	case "bridge":
		err = bridgeCmd(ctx, args[1:], stdout, stderr)
	case "streams":
		err = streamsCmd(ctx, args[1:], stdout, stderr)
	case "inspect":
		err = inspectCmd(ctx, args[1:], stdout, stderr)
	case "register":
		err = registerCmd(ctx, args[1:], stdout, stderr)
	case "sink":
		err = sinkCmd(ctx, args[1:], stdout, stderr)
	case "nats-config":
		err = natsConfigCmd(args[1:], stdout, stderr)
	case "adapter":
		err = adapterCmd(ctx, args[1:], stdout, stderr)
	case "healthcheck":
		err = healthcheckCmd(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		err = versionCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		return helpCmd(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "hintstream: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	var reported errReported
	if err != nil && !isHelp(err) && !errors.As(err, &reported) {
		fmt.Fprintf(stderr, "hintstream %s: %v\n", args[0], err)
	}
	return exitCode(err)
}

// helpCmd prints the overview, or with a command name that command's
// --help (as "go help build" does).
func helpCmd(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, usage)
		return exitOK
	case len(args) > 1 || args[0] == "help" || strings.HasPrefix(args[0], "-"):
		fmt.Fprintf(stderr, "usage: hintstream help [command]\n")
		return exitUsage
	}
	return realMain([]string{args[0], "--help"}, stdout, stderr)
}

// newLogger is every command's logger. Durations print as Go duration
// strings ("1.5s") in both formats: slog's JSON handler would print them
// as integer nanoseconds, which nobody reads right at a glance.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: durationString}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// durationString is newLogger's slog.HandlerOptions.ReplaceAttr.
func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
