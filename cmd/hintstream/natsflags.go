package main

import (
	"flag"

	"github.com/hintstream/hintstream/natsconn"
)

// natsFlags registers the NATS security flags shared by every command and
// returns the config they fill (its URL is set by the caller). Secrets are
// better given by environment or file than on the command line, where
// `ps` shows them.
func natsFlags(fs *flag.FlagSet, name string) func() natsconn.Config {
	var c natsconn.Config
	fs.StringVar(&c.CredsFile, "nats-creds", env("HINTSTREAM_NATS_CREDS", ""), "NATS credentials file, JWT and nkey seed (env HINTSTREAM_NATS_CREDS)")
	fs.StringVar(&c.NKeySeedFile, "nats-nkey", env("HINTSTREAM_NATS_NKEY", ""), "NATS nkey seed file (env HINTSTREAM_NATS_NKEY)")
	fs.StringVar(&c.User, "nats-user", env("HINTSTREAM_NATS_USER", ""), "NATS user (env HINTSTREAM_NATS_USER)")
	fs.StringVar(&c.Password, "nats-password", env("HINTSTREAM_NATS_PASSWORD", ""), "NATS password (env HINTSTREAM_NATS_PASSWORD)")
	fs.StringVar(&c.Token, "nats-token", env("HINTSTREAM_NATS_TOKEN", ""), "NATS token (env HINTSTREAM_NATS_TOKEN)")
	fs.StringVar(&c.TLSCA, "nats-tls-ca", env("HINTSTREAM_NATS_TLS_CA", ""), "CA certificate(s) to verify the NATS server (env HINTSTREAM_NATS_TLS_CA)")
	fs.StringVar(&c.TLSCert, "nats-tls-cert", env("HINTSTREAM_NATS_TLS_CERT", ""), "client certificate for mutual TLS (env HINTSTREAM_NATS_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "nats-tls-key", env("HINTSTREAM_NATS_TLS_KEY", ""), "client key for mutual TLS (env HINTSTREAM_NATS_TLS_KEY)")
	fs.StringVar(&c.TLSServerName, "nats-tls-server-name", env("HINTSTREAM_NATS_TLS_SERVER_NAME", ""), "expected server name in the NATS server's certificate (env HINTSTREAM_NATS_TLS_SERVER_NAME)")
	fs.BoolVar(&c.TLSInsecure, "nats-tls-insecure", false, "skip verification of the NATS server's certificate (testing only)")
	fs.StringVar(&c.InboxPrefix, "nats-inbox-prefix", env("HINTSTREAM_NATS_INBOX_PREFIX", ""), "subject prefix of this connection's reply inboxes (env HINTSTREAM_NATS_INBOX_PREFIX) (default "+natsconn.DefaultInboxPrefix+
		", for register "+natsconn.WorkerInboxPrefix+".<worker id>); the server must let this user subscribe to <prefix>.>")
	return func() natsconn.Config {
		c.Name = name
		if c.InboxPrefix == "" {
			c.InboxPrefix = natsconn.DefaultInboxPrefix
		}
		return c
	}
}
