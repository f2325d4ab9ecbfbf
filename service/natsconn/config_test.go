package natsconn_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/nats-io/nkeys"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir, "v")
	user, acct := must(nkeys.CreateUser()), must(nkeys.CreateAccount())
	seed := writeFile(t, dir, "user.nk", must(user.Seed()))
	acctSeed := writeFile(t, dir, "acct.nk", must(acct.Seed()))
	creds := userCreds(t, dir, "u", acct)
	garbage := writeFile(t, dir, "garbage", []byte("not a pem, not a seed"))
	missing := filepath.Join(dir, "missing")

	ok := []natsconn.Config{
		{},
		{URL: "nats://a:4222,nats://b:4222", Name: "x"},
		{CredsFile: creds},
		{NKeySeedFile: seed},
		{User: "u", Password: "pw"},
		{Token: "tok"},
		{TLSCA: p.CA, TLSCert: p.ClientCert, TLSKey: p.ClientKey, TLSServerName: "nats.internal"},
		{TLSInsecure: true, CredsFile: creds},
	}
	for i, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("ok[%d]: %v", i, err)
		}
		if _, err := c.Options(); err != nil {
			t.Errorf("ok[%d] Options: %v", i, err)
		}
	}

	bad := []struct {
		name string
		c    natsconn.Config
		want string
	}{
		{"creds and nkey", natsconn.Config{CredsFile: creds, NKeySeedFile: seed}, "creds file, nkey seed file"},
		{"token and user", natsconn.Config{Token: "s3cret-token", User: "u", Password: "s3cret-pw"}, "more than one authentication method"},
		{"password alone", natsconn.Config{Password: "s3cret-pw"}, "password given without a user"},
		{"user alone", natsconn.Config{User: "u"}, "without a password"},
		{"cert without key", natsconn.Config{TLSCert: p.ClientCert}, "certificate and key must be given together"},
		{"key without cert", natsconn.Config{TLSKey: p.ClientKey}, "certificate and key must be given together"},
		{"insecure with CA", natsconn.Config{TLSInsecure: true, TLSCA: p.CA}, "choose one"},
		{"missing creds", natsconn.Config{CredsFile: missing}, "no such file"},
		{"garbage creds", natsconn.Config{CredsFile: garbage}, "no user JWT"},
		{"missing seed", natsconn.Config{NKeySeedFile: missing}, "no such file"},
		{"garbage seed", natsconn.Config{NKeySeedFile: garbage}, "no nkey seed"},
		{"account seed", natsconn.Config{NKeySeedFile: acctSeed}, "not a user seed"},
		{"missing CA", natsconn.Config{TLSCA: missing}, "no such file"},
		{"garbage CA", natsconn.Config{TLSCA: garbage}, "no PEM certificate"},
		{"mismatched pair", natsconn.Config{TLSCert: p.ClientCert, TLSKey: p.ServerKey}, "TLS client certificate"},
		{"negative wait", natsconn.Config{ReconnectWait: -1}, "negative reconnect wait"},
	}
	for _, tc := range bad {
		err := tc.c.Validate()
		if !errors.Is(err, natsconn.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want ErrConfig containing %q, got %v", tc.name, tc.want, err)
			continue
		}
		if _, oerr := tc.c.Options(); !errors.Is(oerr, natsconn.ErrConfig) {
			t.Errorf("%s: Options: want ErrConfig, got %v", tc.name, oerr)
		}
		if _, cerr := natsconn.Connect(tc.c); !errors.Is(cerr, natsconn.ErrConfig) {
			t.Errorf("%s: Connect: want ErrConfig, got %v", tc.name, cerr)
		}
		for _, secret := range []string{"s3cret-token", "s3cret-pw", string(must(user.Seed()))} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: error reveals a secret: %v", tc.name, err)
			}
		}
	}

	// Every problem is reported at once, not just the first.
	err := natsconn.Config{Password: "pw", TLSCert: p.ClientCert, TLSCA: missing}.Validate()
	for _, want := range []string{"without a user", "together", "TLS CA"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("joined error lacks %q: %v", want, err)
		}
	}
}

func TestConnectErrorRedactsURL(t *testing.T) {
	// Nothing listens on port 1; the error must not echo the URL's secret.
	_, err := natsconn.Connect(natsconn.Config{URL: "nats://hs:s3cret-pw@127.0.0.1:1"}, fastFail...)
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	if strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("error should name the server without its password: %v", err)
	}
}
