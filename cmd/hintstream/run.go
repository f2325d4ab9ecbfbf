package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/internal/demo"
	"github.com/hintstream/hintstream/service"
)

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// Every flag that sets a field of service.Config is the Config's
	// (service/flags*.go); the rest are about this command.
	var cfg service.Config
	cfg.RegisterFlags(fs)
	applyConfig := configFlag(fs)
	var (
		demoOn       = fs.Bool("demo", false, "also run simulated workers and a stream of wake-ups, printing the hints they receive")
		demoEvery    = fs.Duration("demo-interval", time.Second, "time between demo requests")
		demoCount    = fs.Int("demo-count", 0, "demo requests to publish; 0 = until stopped")
		logFormat    = fs.String("log-format", env("HINTSTREAM_LOG_FORMAT", "text"), "text or json (env HINTSTREAM_LOG_FORMAT)")
		logLevel     = fs.String("log-level", env("HINTSTREAM_LOG_LEVEL", "info"), "debug, info, warn or error (env HINTSTREAM_LOG_LEVEL)")
		hintsLog     = fs.String("hints-log", "", "append every hint handed to a sender to this file as a JSON line (compare with replay --dry-run)")
		checkOnly    = fs.Bool("check-config", false, "validate the flags and exit without connecting")
		stopDeadline = fs.Duration("shutdown-timeout", service.DefaultShutdownTimeout, "how long shutdown may spend flushing queued hints")
	)
	startRegistrations := registrationFlag(fs) // registration.go
	demoEngineName := demoEngineFlag(fs)       // demo_engine.go
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: hintstream run [flags]\n\nFlags (default in brackets):\n")
		printFlags(fs)
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
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	if err := cfg.ApplyFlags(); err != nil {
		return err
	}
	cfg.Logger = log
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
	if cfg.NATSURL == "" {
		fmt.Fprintf(stdout, "hintstream: embedded JetStream server at %s (store %s)\n", svc.ClientURL(), cfg.EmbeddedDir)
	}
	if *demoOn {
		opts := demo.Options{Interval: *demoEvery, Count: *demoCount, Out: stdout, Logger: log,
			Bucket: cfg.RegistryBucket, Master: master, Agents: cfg.Agents != nil, Outcomes: newOutcomeLines(svc)}
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

// env is cmdline.Env, the command line's environment default.
func env(key, def string) string { return cmdline.Env(key, def) }

// split is cmdline.List, a comma-separated flag value.
func split(s string) []string { return cmdline.List(s) }
