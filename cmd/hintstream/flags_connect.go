package main

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/natsconn"
	"github.com/hintstream/hintstream/service"
)

// connectFlags registers --connect-timeout (issue 12, CLI conventions) and
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
	d := fs.Duration("connect-timeout", natsconn.DefaultConnectTimeout,
		"keep retrying the first NATS connection, with backoff, this long before giving up (0: one attempt)")
	return func(c *service.Config) error {
		if *d < 0 {
			return fmt.Errorf("--connect-timeout must not be negative, got %v", *d)
		}
		c.NATS.ConnectTimeout = *d
		return nil
	}
}
