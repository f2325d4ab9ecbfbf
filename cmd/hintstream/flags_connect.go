package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/hintstream/hintstream/natsconn"
	"github.com/hintstream/hintstream/service"
)

// connectFlags registers --connect-timeout (CLI conventions) and
// returns what applies it to the NATS config (after natsFlags' config is
// set).
//
// Compose and Kubernetes start containers in no fixed order: a run that
// gave up on the first refused connection would crash-loop until NATS was
// up. It retries with backoff instead (natsconn.Dial), logging each
// attempt, and fails with natsconn.ErrConnectTimeout once the timeout has
// passed. The embedded server (no --nats-url) is up before the first
// attempt, so the flag does not matter there.
func connectFlags(fs *flag.FlagSet) func(*service.Config) error {
	timeout := connectTimeoutFlag(fs)
	return func(c *service.Config) error {
		d, err := timeout()
		c.NATS.ConnectTimeout = d
		return err
	}
}

// connectTimeoutFlag registers --connect-timeout on fs; the returned func
// gives its value, or an error when it is negative. The long-running
// commands started beside NATS (run, register, bridge, demo) take it.
func connectTimeoutFlag(fs *flag.FlagSet) func() (time.Duration, error) {
	d := fs.Duration("connect-timeout", natsconn.DefaultConnectTimeout,
		"keep retrying the first NATS connection, with backoff, this long before giving up (0: one attempt)")
	return func() (time.Duration, error) {
		if *d < 0 {
			return 0, fmt.Errorf("--connect-timeout must not be negative, got %v", *d)
		}
		return *d, nil
	}
}
