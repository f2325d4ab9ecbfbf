package natsconn

import (
	"flag"
	"io"
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
