package main

import (
	"flag"

	"github.com/hintstream/hintstream/service/natsconn"
)

// natsFlags registers the NATS security flags shared by every command
// (natsconn.Config's) and returns the config they fill, named name (its
// URL is set by the caller).
func natsFlags(fs *flag.FlagSet, name string) func() natsconn.Config {
	var c natsconn.Config
	c.RegisterFlags(fs)
	return func() natsconn.Config {
		c.Name = name
		if c.InboxPrefix == "" {
			c.InboxPrefix = natsconn.DefaultInboxPrefix
		}
		return c
	}
}
