package natsconn

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// Each flag defaults to its environment variable; the command line wins.
func TestRegisterFlagsFromEnv(t *testing.T) {
	t.Setenv("HINTSTREAM_NATS_USER", "from-env")
	t.Setenv("HINTSTREAM_NATS_TLS_CA", "/ca.pem")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--nats-tls-ca", "/other.pem", "--nats-tls-insecure"}); err != nil {
		t.Fatal(err)
	}
	if c.User != "from-env" || c.TLSCA != "/other.pem" || !c.TLSInsecure || c.Password != "" {
		t.Fatalf("parsed %+v", c)
	}
}

// --connect-timeout defaults to DefaultConnectTimeout, parses into
// ConnectTimeout, and a negative one is refused by name.
func TestConnectTimeoutFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	c.RegisterConnectTimeoutFlag(fs)
	if c.ConnectTimeout != DefaultConnectTimeout || c.CheckConnectTimeout() != nil {
		t.Fatalf("default %v", c.ConnectTimeout)
	}
	if err := fs.Parse([]string{"--connect-timeout", "-1s"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckConnectTimeout(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--connect-timeout must not be negative") {
		t.Fatalf("negative: %v", err)
	}
}
