package natsconn_test

import (
	"strings"
	"testing"

	"github.com/hintstream/hintstream/service/natsconn"
)

func TestTLSServerVerifiedByCA(t *testing.T) {
	dir := t.TempDir()
	good, other := newPKI(t, dir, "good"), newPKI(t, dir, "other")
	url := startServer(t, tlsServer(t, good, false))

	nc, err := natsconn.Connect(natsconn.Config{URL: url, TLSCA: good.CA, Name: "tls-test"}, fastFail...)
	if err != nil {
		t.Fatalf("connect with the right CA: %v", err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Fatal("connection is not TLS")
	}
	jsRoundTrip(t, nc)

	_, err = natsconn.Connect(natsconn.Config{URL: url, TLSCA: other.CA}, fastFail...)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("wrong CA: want a certificate verification error, got %v", err)
	}
	// Without TLS settings the client must not silently talk plain text.
	if nc2, err := natsconn.Connect(natsconn.Config{URL: url}, fastFail...); err == nil {
		nc2.Close()
		t.Fatal("plain connection to a TLS-only server succeeded")
	}
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	good, other := newPKI(t, dir, "good"), newPKI(t, dir, "other")
	url := startServer(t, tlsServer(t, good, true))

	cfg := natsconn.Config{URL: url, TLSCA: good.CA, TLSCert: good.ClientCert, TLSKey: good.ClientKey}
	nc, err := natsconn.Connect(cfg, fastFail...)
	if err != nil {
		t.Fatalf("connect with client certificate: %v", err)
	}
	defer nc.Close()
	jsRoundTrip(t, nc)

	noCert := natsconn.Config{URL: url, TLSCA: good.CA}
	if nc2, err := natsconn.Connect(noCert, fastFail...); err == nil {
		nc2.Close()
		t.Fatal("connected without a client certificate to a server that requires one")
	} else if !strings.Contains(err.Error(), "mutual TLS") {
		t.Fatalf("without client certificate: want a hint about mutual TLS, got %v", err)
	}

	// A client certificate from a CA the server does not trust.
	foreign := natsconn.Config{URL: url, TLSCA: good.CA, TLSCert: other.ClientCert, TLSKey: other.ClientKey}
	if nc3, err := natsconn.Connect(foreign, fastFail...); err == nil {
		nc3.Close()
		t.Fatal("connected with a client certificate from an untrusted CA")
	}

	wrongCA := natsconn.Config{URL: url, TLSCA: other.CA, TLSCert: good.ClientCert, TLSKey: good.ClientKey}
	if _, err := natsconn.Connect(wrongCA, fastFail...); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("wrong CA: want a certificate verification error, got %v", err)
	}
}

func TestTLSInsecureSkipsVerification(t *testing.T) {
	good := newPKI(t, t.TempDir(), "good")
	url := startServer(t, tlsServer(t, good, false))
	nc, err := natsconn.Connect(natsconn.Config{URL: url, TLSInsecure: true}, fastFail...)
	if err != nil {
		t.Fatalf("insecure TLS: %v", err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Fatal("connection is not TLS")
	}
}
