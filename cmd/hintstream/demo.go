package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/hintstream/hintstream/internal/demo"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
)

// demoCmd runs the simulated cluster of `run --demo` on its own, against
// a bus where hintstream runs elsewhere (docker-compose).
func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		natsURL   = fs.String("nats-url", natsURLEnv(nats.DefaultURL), "NATS server URL"+natsURLUsage)
		every     = fs.Duration("interval", time.Second, "time between requests")
		count     = fs.Int("count", 0, "requests to publish; 0 = until stopped")
		bindHost  = fs.String("bind-host", "127.0.0.1", "where the simulated workers bind their hint sockets")
		advertise = fs.String("advertise-host", "", "host the workers register their hint sockets under (default --bind-host)")
		bucket    = fs.String("registry-bucket", "hintstream_workers", "JetStream KV bucket of the worker registry")
		logFormat = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json")
		logLevel  = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "info"), "debug, info, warn or error")
		traffic   = fs.Bool("traffic-only", false, "publish requests only, no simulated workers (a load generator beside a worker demo)")
		checkOnly = fs.Bool("check-config", false, "validate the flags and exit without connecting")
	)
	natsCfg := natsFlags(fs, "hintstream-demo")
	usageHeader(fs, "Usage: hintstream demo [flags]\n\nA simulated cluster (workers, KV events, load, wake-ups) on an existing bus.")
	connectTimeout := connectTimeoutFlag(fs)
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
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	ct, err := connectTimeout()
	if err != nil {
		return err
	}
	checked = true
	if *checkOnly {
		fmt.Fprintln(stdout, "hintstream demo: configuration ok")
		return nil
	}
	nc, js, err := dialBus(ctx, natsCfg(), *natsURL, log, ct)
	if err != nil {
		return err
	}
	defer nc.Close()
	// The demo may come up before hintstream: make sure its streams exist.
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet(), streams.WithLogger(log)); err != nil {
		return err
	}
	d := demo.New(js, demo.Options{Interval: *every, Count: *count, Out: stdout, Logger: log, Bucket: *bucket,
		BindHost: *bindHost, AdvertiseHost: *advertise, TrafficOnly: *traffic})
	if err := d.Run(ctx); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}
