package service

import (
	"flag"

	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/service/natsconn"
)

// registerBusFlags registers the NATS connection's flags (the URL or the
// embedded server, natsconn.Config's security flags, --connect-timeout)
// and the CURVE keys of the hint sockets.
//
// --connect-timeout: Compose and Kubernetes start containers in no fixed
// order, so run retries the first connection with backoff
// (natsconn.Dial), logging each attempt, and fails with
// natsconn.ErrConnectTimeout once the timeout has passed. The embedded
// server (no --nats-url) is up before the first attempt, so the flag does
// not matter there.
func (c *Config) registerBusFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.NATSURL, "nats-url", cmdline.NATSURLEnv(""), "NATS server URL"+cmdline.NATSURLUsage+"; empty starts an embedded JetStream server")
	fs.StringVar(&c.EmbeddedDir, "data-dir", cmdline.Env("HINTSTREAM_DATA_DIR", DefaultEmbeddedDir), "embedded server's JetStream store (env HINTSTREAM_DATA_DIR)")
	fs.IntVar(&c.EmbeddedPort, "embedded-port", 4222, "embedded server's client port on 127.0.0.1; 0 picks a free one")
	c.NATS.RegisterFlags(fs)
	c.NATS.RegisterConnectTimeoutFlag(fs)
	fs.StringVar(&c.PinCurvePublicKey, "pin-curve-public-key", cmdline.Env("HINTSTREAM_PIN_CURVE_PUBLIC_KEY", ""), "CURVE server key (Z85) of the pin endpoint (env HINTSTREAM_PIN_CURVE_PUBLIC_KEY); empty: plain text (workers give theirs as hint_curve_public_key)")
	fs.StringVar(&c.CurveClientPublicKey, "curve-public-key", cmdline.Env("HINTSTREAM_CURVE_PUBLIC_KEY", ""), "hintstream's own CURVE public key, Z85 (env HINTSTREAM_CURVE_PUBLIC_KEY); empty: a fresh keypair at start-up")
	fs.StringVar(&c.CurveClientSecretKey, "curve-secret-key", cmdline.Env("HINTSTREAM_CURVE_SECRET_KEY", ""), "hintstream's own CURVE secret key, Z85 (env HINTSTREAM_CURVE_SECRET_KEY, preferred to the flag)")
}

// applyBusFlags checks the embedded server's port, names the connection
// "hintstream", gives it the default reply-inbox prefix when none was
// given, and checks --connect-timeout.
func (c *Config) applyBusFlags(*runFlags) error {
	if c.EmbeddedPort < 0 || c.EmbeddedPort > 65535 {
		return flagError("--embedded-port must be 0..65535, got %d", c.EmbeddedPort)
	}
	c.NATS.Name = "hintstream"
	if c.NATS.InboxPrefix == "" {
		c.NATS.InboxPrefix = natsconn.DefaultInboxPrefix
	}
	return c.NATS.CheckConnectTimeout()
}
