package natsconn_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startServer runs a real nats-server with JetStream on a free loopback
// port, configured further by secure, and returns its client URL.
func startServer(t *testing.T, secure func(*server.Options)) string {
	t.Helper()
	opts := &server.Options{
		ServerName: "natsconn-test",
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		NoLog:      true,
		NoSigs:     true,
	}
	if secure != nil {
		secure(opts)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatal("nats-server not ready within 10s")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

// fastFail makes a failing connection attempt return at once.
var fastFail = []nats.Option{nats.Timeout(2 * time.Second), nats.NoReconnect()}

// jsRoundTrip proves JetStream works over nc: it creates a stream,
// publishes to it and reads the message back.
func jsRoundTrip(t *testing.T, nc *nats.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SECURED", Subjects: []string{"secured.>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatalf("create stream over secured connection: %v", err)
	}
	ack, err := js.Publish(ctx, "secured.hello", []byte("over the secured link"))
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	msg, err := st.GetMsg(ctx, ack.Sequence)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if string(msg.Data) != "over the secured link" || msg.Subject != "secured.hello" {
		t.Fatalf("got %q on %q", msg.Data, msg.Subject)
	}
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pki is a throw-away CA with a server certificate for 127.0.0.1 and a
// client certificate, all as PEM files.
type pki struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, cn string) ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf certificate; server ones carry SAN 127.0.0.1.
func (c ca) issue(t *testing.T, cn string, serial int64, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func newPKI(t *testing.T, dir, prefix string) pki {
	t.Helper()
	c := newCA(t, prefix+" test CA")
	sc, sk := c.issue(t, "nats-server", 2, true)
	cc, ck := c.issue(t, "hintstream", 3, false)
	f := func(n string, b []byte) string { return writeFile(t, dir, fmt.Sprintf("%s-%s", prefix, n), b) }
	return pki{
		CA:         f("ca.pem", c.pem),
		ServerCert: f("server.pem", sc),
		ServerKey:  f("server-key.pem", sk),
		ClientCert: f("client.pem", cc),
		ClientKey:  f("client-key.pem", ck),
	}
}

// tlsServer requires TLS on the server, and client certificates from the
// same CA when verify is set.
func tlsServer(t *testing.T, p pki, verify bool) func(*server.Options) {
	return func(o *server.Options) {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
			CertFile: p.ServerCert, KeyFile: p.ServerKey, CaFile: p.CA, Verify: verify,
		})
		if err != nil {
			t.Fatal(err)
		}
		o.TLS, o.TLSVerify, o.TLSConfig, o.TLSTimeout = true, verify, tc, 2
	}
}
