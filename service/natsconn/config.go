package natsconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// ErrConfig marks every error of Validate and Options: the configuration
// itself is wrong (conflicting settings, unreadable or malformed files),
// so retrying the connection cannot help.
var ErrConfig = errors.New("natsconn: invalid NATS connection config")

// Config is how an operator reaches a (possibly secured) NATS server. The
// zero value connects to nats.DefaultURL without authentication or TLS.
type Config struct {
	// URL is one server URL or a comma-separated list (default
	// nats.DefaultURL). A tls:// URL requires TLS even without TLSCA.
	URL string

	// CredsFile is a .creds file holding a user JWT and its nkey seed
	// (nats.UserCredentials), for servers in operator/JWT mode.
	CredsFile string
	// NKeySeedFile holds a user nkey seed ("SU..."), for servers that list
	// user nkeys in their config (nats.NkeyOptionFromSeed).
	NKeySeedFile string
	// User and Password authenticate with a username and password.
	User, Password string
	// Token authenticates with a bearer token.
	Token string

	// TLSCA is a PEM bundle of CAs that verify the server's certificate
	// (default: the system roots). Setting any TLS* field enables TLS.
	TLSCA string
	// TLSCert and TLSKey are the client certificate and key, PEM, for
	// servers that require mutual TLS. Both or neither.
	TLSCert, TLSKey string
	// TLSServerName overrides the name checked against the server's
	// certificate (default: the host of the URL).
	TLSServerName string
	// TLSInsecure skips verifying the server's certificate. Never the
	// default; for tests and emergencies only. Cannot be combined with TLSCA.
	TLSInsecure bool

	// InboxPrefix is the subject prefix of this connection's reply
	// inboxes (default nats.go's "_INBOX"). A least-privilege server
	// gives each role its own prefix and lets a user subscribe to its
	// prefix only, so no user can read another's replies (JetStream
	// deliveries, KV values, snapshot chunks): see ValidInboxPrefix.
	InboxPrefix string

	// Name is the connection name the server shows (default "hintstream").
	Name string
	// ReconnectWait is the pause between reconnect attempts to the same
	// server (default 2s, jittered). Reconnects never give up.
	ReconnectWait time.Duration
	// ConnectTimeout is how long Dial keeps retrying the first
	// connection, with backoff, while no server answers (0: one attempt,
	// as Connect). Negative is invalid.
	ConnectTimeout time.Duration
	// Logger receives disconnect, reconnect and async-error events (default
	// slog.Default()). Handlers passed to Connect as extra options win.
	Logger *slog.Logger
}

func (c Config) tlsWanted() bool {
	return c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != "" || c.TLSServerName != "" || c.TLSInsecure
}

// authMethods names the authentication methods set, for conflict errors.
func (c Config) authMethods() []string {
	var m []string
	if c.CredsFile != "" {
		m = append(m, "creds file")
	}
	if c.NKeySeedFile != "" {
		m = append(m, "nkey seed file")
	}
	if c.User != "" || c.Password != "" {
		m = append(m, "user/password")
	}
	if c.Token != "" {
		m = append(m, "token")
	}
	return m
}

// Validate reports, as one error wrapping ErrConfig, everything wrong with
// c that can be known without connecting: conflicting authentication
// methods, a password without a user, a client certificate without its key
// (or the reverse), TLSInsecure with TLSCA, and files that are missing,
// unreadable or not what they should be. It does not reach the server.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if m := c.authMethods(); len(m) > 1 {
		bad("more than one authentication method given (%s): choose one", strings.Join(m, ", "))
	}
	if c.ConnectTimeout < 0 {
		bad("connect timeout %v is negative (0: one attempt)", c.ConnectTimeout)
	}
	if c.Password != "" && c.User == "" {
		bad("password given without a user")
	}
	if c.User != "" && c.Password == "" {
		bad("user %q given without a password", c.User)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		bad("client certificate and key must be given together (certificate %q, key %q)", c.TLSCert, c.TLSKey)
	}
	if c.TLSInsecure && c.TLSCA != "" {
		bad("TLS insecure (skip server verification) and a TLS CA are both given: choose one")
	}
	if c.ReconnectWait < 0 {
		bad("negative reconnect wait %v", c.ReconnectWait)
	}
	if c.InboxPrefix != "" {
		if err := ValidInboxPrefix(c.InboxPrefix); err != nil {
			errs = append(errs, err)
		}
	}
	if c.CredsFile != "" {
		if err := checkCreds(c.CredsFile); err != nil {
			errs = append(errs, err)
		}
	}
	if c.NKeySeedFile != "" {
		if err := checkSeed(c.NKeySeedFile); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TLSCA != "" {
		if _, err := loadCA(c.TLSCA); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TLSCert != "" && c.TLSKey != "" {
		if _, err := loadKeyPair(c.TLSCert, c.TLSKey); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
}

// checkCreds parses a .creds file the way nats.UserCredentials will, so a
// bad file fails at start-up rather than on every reconnect.
func checkCreds(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("creds file: %w", err)
	}
	tok, err := nkeys.ParseDecoratedJWT(b)
	if err == nil {
		_, err = jwt.DecodeUserClaims(tok)
	}
	if err != nil {
		return fmt.Errorf("creds file %q: no user JWT: %v", path, err)
	}
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		// nkeys' error names the problem without echoing the seed.
		return fmt.Errorf("creds file %q: no nkey seed: %v", path, err)
	}
	kp.Wipe()
	return nil
}

func checkSeed(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("nkey seed file: %w", err)
	}
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return fmt.Errorf("nkey seed file %q: no nkey seed: %v", path, err)
	}
	defer kp.Wipe()
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return fmt.Errorf("nkey seed file %q: not a user seed (it should start with SU)", path)
	}
	return nil
}

func loadCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("TLS CA %q: no PEM certificate in it", path)
	}
	return pool, nil
}

func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return cert, fmt.Errorf("TLS client certificate %q / key %q: %w", certFile, keyFile, err)
	}
	return cert, nil
}

// ValidInboxPrefix reports whether p can prefix reply inboxes: dot
// separated tokens of printable characters without wildcards, the way
// nats.CustomInboxPrefix and a server's permission rule "<p>.>" read it.
func ValidInboxPrefix(p string) error {
	if p == "" {
		return errors.New("inbox prefix is empty")
	}
	for _, tok := range strings.Split(p, ".") {
		if tok == "" {
			return fmt.Errorf("inbox prefix %q has an empty token", p)
		}
		if tok == "*" || tok == ">" || strings.ContainsAny(tok, "*> \t\r\n") {
			return fmt.Errorf("inbox prefix %q holds a wildcard or white space", p)
		}
	}
	return nil
}
