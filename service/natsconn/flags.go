package natsconn

import (
	"flag"
	"fmt"
	"os"
)

// RegisterFlags registers the NATS security flags every command shares
// on fs, bound to c, each defaulting to its HINTSTREAM_NATS_* environment
// variable. Secrets are better given by environment or file than on the
// command line, where `ps` shows them. The URL, the connection name and
// the connect timeout are the command's.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.CredsFile, "nats-creds", fromEnv("HINTSTREAM_NATS_CREDS"), "NATS credentials file, JWT and nkey seed (env HINTSTREAM_NATS_CREDS)")
	fs.StringVar(&c.NKeySeedFile, "nats-nkey", fromEnv("HINTSTREAM_NATS_NKEY"), "NATS nkey seed file (env HINTSTREAM_NATS_NKEY)")
	fs.StringVar(&c.User, "nats-user", fromEnv("HINTSTREAM_NATS_USER"), "NATS user (env HINTSTREAM_NATS_USER)")
	fs.StringVar(&c.Password, "nats-password", fromEnv("HINTSTREAM_NATS_PASSWORD"), "NATS password (env HINTSTREAM_NATS_PASSWORD)")
	fs.StringVar(&c.Token, "nats-token", fromEnv("HINTSTREAM_NATS_TOKEN"), "NATS token (env HINTSTREAM_NATS_TOKEN)")
	fs.StringVar(&c.TLSCA, "nats-tls-ca", fromEnv("HINTSTREAM_NATS_TLS_CA"), "CA certificate(s) to verify the NATS server (env HINTSTREAM_NATS_TLS_CA)")
	fs.StringVar(&c.TLSCert, "nats-tls-cert", fromEnv("HINTSTREAM_NATS_TLS_CERT"), "client certificate for mutual TLS (env HINTSTREAM_NATS_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "nats-tls-key", fromEnv("HINTSTREAM_NATS_TLS_KEY"), "client key for mutual TLS (env HINTSTREAM_NATS_TLS_KEY)")
	fs.StringVar(&c.TLSServerName, "nats-tls-server-name", fromEnv("HINTSTREAM_NATS_TLS_SERVER_NAME"), "expected server name in the NATS server's certificate (env HINTSTREAM_NATS_TLS_SERVER_NAME)")
	fs.BoolVar(&c.TLSInsecure, "nats-tls-insecure", false, "skip verification of the NATS server's certificate (testing only)")
	fs.StringVar(&c.InboxPrefix, "nats-inbox-prefix", fromEnv("HINTSTREAM_NATS_INBOX_PREFIX"), "subject prefix of this connection's reply inboxes (env HINTSTREAM_NATS_INBOX_PREFIX) (default "+DefaultInboxPrefix+
		", for register "+WorkerInboxPrefix+".<worker id>); the server must let this user subscribe to <prefix>.>")
}

// fromEnv is an environment variable's value, "" when unset or empty.
func fromEnv(key string) string { return os.Getenv(key) }

// RegisterConnectTimeoutFlag registers --connect-timeout on fs, bound to
// c.ConnectTimeout and set to DefaultConnectTimeout. The long-running
// commands started beside NATS (run, register, bridge, demo) take it:
// Compose and Kubernetes start containers in no fixed order, and a
// command that gave up on the first refused connection would crash-loop
// until NATS was up. CheckConnectTimeout refuses a negative value.
func (c *Config) RegisterConnectTimeoutFlag(fs *flag.FlagSet) {
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", DefaultConnectTimeout,
		"keep retrying the first NATS connection, with backoff, this long before giving up (0: one attempt)")
}

// CheckConnectTimeout refuses a negative --connect-timeout, naming the
// flag; the error wraps ErrConfig.
func (c Config) CheckConnectTimeout() error {
	if c.ConnectTimeout < 0 {
		return fmt.Errorf("%w: --connect-timeout must not be negative, got %v", ErrConfig, c.ConnectTimeout)
	}
	return nil
}
