package natsconn_test

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// must unwraps key and JWT generation, which fails only if the system's
// randomness does; the panic then fails the test with a stack.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// wantAuthFailure asserts that c is refused by the server's authorization.
func wantAuthFailure(t *testing.T, c natsconn.Config, what string) {
	t.Helper()
	nc, err := natsconn.Connect(c, fastFail...)
	if err == nil {
		nc.Close()
		t.Fatalf("%s: connected", what)
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("%s: want nats.ErrAuthorization, got %v", what, err)
	}
}

// userCreds writes a .creds file for a new user signed by account.
func userCreds(t *testing.T, dir, name string, account nkeys.KeyPair) string {
	t.Helper()
	ukp := must(nkeys.CreateUser())
	uc := jwt.NewUserClaims(must(ukp.PublicKey()))
	uc.Name = name
	ujwt := must(uc.Encode(account))
	creds := must(jwt.FormatUserConfig(ujwt, must(ukp.Seed())))
	return writeFile(t, dir, name+".creds", creds)
}

func TestCredsFileOperatorMode(t *testing.T) {
	dir := t.TempDir()
	okp := must(nkeys.CreateOperator())
	sys, acct, stranger := must(nkeys.CreateAccount()), must(nkeys.CreateAccount()), must(nkeys.CreateAccount())
	sysPub, acctPub := must(sys.PublicKey()), must(acct.PublicKey())

	oc := jwt.NewOperatorClaims(must(okp.PublicKey()))
	oc.SystemAccount = sysPub
	op := must(jwt.DecodeOperatorClaims(must(oc.Encode(okp))))

	ac := jwt.NewAccountClaims(acctPub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(acctPub, must(ac.Encode(okp))); err != nil {
		t.Fatal(err)
	}
	if err := resolver.Store(sysPub, must(jwt.NewAccountClaims(sysPub).Encode(okp))); err != nil {
		t.Fatal(err)
	}
	url := startServer(t, func(o *server.Options) {
		o.TrustedOperators = []*jwt.OperatorClaims{op}
		o.AccountResolver = resolver
		o.SystemAccount = sysPub
	})

	nc, err := natsconn.Connect(natsconn.Config{URL: url, CredsFile: userCreds(t, dir, "hintstream", acct)}, fastFail...)
	if err != nil {
		t.Fatalf("connect with creds: %v", err)
	}
	defer nc.Close()
	jsRoundTrip(t, nc)

	// A user of an account the operator never signed.
	wantAuthFailure(t, natsconn.Config{URL: url, CredsFile: userCreds(t, dir, "stranger", stranger)}, "unknown account")
	wantAuthFailure(t, natsconn.Config{URL: url}, "no credentials")
}

func TestNKeySeedFile(t *testing.T) {
	dir := t.TempDir()
	user, other := must(nkeys.CreateUser()), must(nkeys.CreateUser())
	url := startServer(t, func(o *server.Options) {
		o.Nkeys = []*server.NkeyUser{{Nkey: must(user.PublicKey())}}
	})
	seedFile := writeFile(t, dir, "user.nk", must(user.Seed()))
	otherFile := writeFile(t, dir, "other.nk", must(other.Seed()))

	nc, err := natsconn.Connect(natsconn.Config{URL: url, NKeySeedFile: seedFile}, fastFail...)
	if err != nil {
		t.Fatalf("connect with nkey seed: %v", err)
	}
	defer nc.Close()
	jsRoundTrip(t, nc)

	wantAuthFailure(t, natsconn.Config{URL: url, NKeySeedFile: otherFile}, "unknown nkey")
}

func TestUserPassword(t *testing.T) {
	url := startServer(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "hs", Password: "s3cret-pw"}}
	})
	nc, err := natsconn.Connect(natsconn.Config{URL: url, User: "hs", Password: "s3cret-pw"}, fastFail...)
	if err != nil {
		t.Fatalf("connect with user/password: %v", err)
	}
	defer nc.Close()
	jsRoundTrip(t, nc)
	wantAuthFailure(t, natsconn.Config{URL: url, User: "hs", Password: "wrong"}, "wrong password")
}

func TestToken(t *testing.T) {
	url := startServer(t, func(o *server.Options) { o.Authorization = "s3cret-token" })
	nc, err := natsconn.Connect(natsconn.Config{URL: url, Token: "s3cret-token"}, fastFail...)
	if err != nil {
		t.Fatalf("connect with token: %v", err)
	}
	defer nc.Close()
	jsRoundTrip(t, nc)
	wantAuthFailure(t, natsconn.Config{URL: url, Token: "wrong"}, "wrong token")
}
