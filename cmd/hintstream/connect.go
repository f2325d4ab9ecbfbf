package main

import (
	"flag"
	"time"

	"github.com/hintstream/hintstream/service/natsconn"
)

// connectTimeoutFlag registers --connect-timeout (natsconn's) on fs for
// the commands started beside NATS other than run (register, bridge,
// demo), whose service.Config registers its own; the returned func gives
// its value, or an error when it is negative.
func connectTimeoutFlag(fs *flag.FlagSet) func() (time.Duration, error) {
	var c natsconn.Config
	c.RegisterConnectTimeoutFlag(fs)
	return func() (time.Duration, error) {
		return c.ConnectTimeout, c.CheckConnectTimeout()
	}
}
