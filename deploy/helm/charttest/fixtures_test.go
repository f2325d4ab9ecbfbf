package charttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// secrets stands in for the cluster's Secrets: name → key → content. The
// files are real (a user JWT signed by an account, a user seed, a
// certificate and its key), because --check-config parses each one.
type secrets map[string]map[string][]byte

func newSecrets(t *testing.T) secrets {
	t.Helper()
	account, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	userPub, _ := user.PublicKey()
	userSeed, _ := user.Seed()
	claims := jwt.NewUserClaims(userPub)
	claims.Name = "hintstream"
	tok, err := claims.Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(tok, userSeed)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := selfSigned(t)
	return secrets{
		"nats-creds":    {"hintstream.creds": creds},
		"nats-nkey":     {"seed.nk": userSeed},
		"nats-password": {"username": []byte("hintstream"), "pw": []byte("s3cret")},
		"nats-token":    {"token": []byte("t0ken")},
		// cert-manager's layout: ca.crt, tls.crt, tls.key.
		"nats-client-tls": {"ca.crt": cert, "tls.crt": cert, "tls.key": key},
	}
}

// selfSigned makes a certificate and its key, PEM; one certificate serves
// as CA and as client certificate, which is all --check-config can tell.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hintstream"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
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
