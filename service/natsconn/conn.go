package natsconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Defaults of Options.
const (
	DefaultName          = "hintstream"
	DefaultReconnectWait = 2 * time.Second
	// DefaultInboxPrefix is the reply-inbox prefix of hintstream's own
	// connections; deploy/nats/nats-server.conf lets only the hintstream
	// user subscribe below it.
	DefaultInboxPrefix = "_INBOX_hintstream"
	// WorkerInboxPrefix is the reply-inbox prefix of a worker's
	// connections (hintstream register): worker id N uses
	// WorkerInboxPrefix + ".N", so a config may allow one worker its own
	// replies ("_INBOX_worker.N.>") or all workers theirs.
	WorkerInboxPrefix = "_INBOX_worker"
)

// Options validates c (see Validate) and returns the nats.go options that
// implement it: authentication, TLS, the connection name, and reconnects
// that never give up (MaxReconnects(-1), ReconnectWait with jitter;
// nats.go's reconnect buffer stays on) with handlers that log
// disconnects, reconnects, the final close and async errors to c.Logger. Later options override
// earlier ones, so a caller appending its own handlers replaces these.
func (c Config) Options() ([]nats.Option, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	name := c.Name
	if name == "" {
		name = DefaultName
	}
	wait := c.ReconnectWait
	if wait == 0 {
		wait = DefaultReconnectWait
	}
	perms := &permissionLog{log: log}
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(wait),
		nats.ReconnectJitter(wait/4, wait/2),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if err := nc.LastError(); err != nil && !errors.Is(err, nats.ErrPermissionViolation) { // that one was said
				log.Warn("nats connection closed", "err", err)
			}
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			if perms.handle(err) {
				return
			}
			args := []any{"err", err}
			if sub != nil {
				args = append(args, "subject", sub.Subject)
			}
			log.Warn("nats async error", args...)
		}),
	}

	switch {
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	case c.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(c.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("%w: nkey seed file %q: %v", ErrConfig, c.NKeySeedFile, err)
		}
		opts = append(opts, o)
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	}

	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	if c.tlsWanted() {
		tc, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(tc))
	}
	return opts, nil
}

// tlsConfig builds the client TLS configuration itself, rather than with
// nats.RootCAs/ClientCert, so that file errors surface here, once, and not
// on every reconnect.
func (c Config) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.TLSServerName,
		InsecureSkipVerify: c.TLSInsecure, // only when the operator asked for it
	}
	if c.TLSCA != "" {
		pool, err := loadCA(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		tc.RootCAs = pool
	}
	if c.TLSCert != "" {
		cert, err := loadKeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Connect connects to c.URL (default nats.DefaultURL) with c.Options()
// followed by extra, which can override any of them (handlers, reconnect
// policy, nats.RetryOnFailedConnect). A configuration error wraps
// ErrConfig; otherwise the error is nats.go's (for example
// nats.ErrAuthorization, or a TLS handshake error), prefixed with the
// redacted URL.
func Connect(c Config, extra ...nats.Option) (*nats.Conn, error) {
	opts, err := c.Options()
	if err != nil {
		return nil, err
	}
	url := c.URL
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		if c.TLSCert == "" && strings.Contains(err.Error(), "tls") {
			// A server that demands a client certificate just hangs up,
			// which nats.go reports as a bare TLS error.
			return nil, fmt.Errorf("natsconn: connect to %s: %w (no client certificate given: if the server requires mutual TLS, set one and its key)", redact(url), err)
		}
		return nil, fmt.Errorf("natsconn: connect to %s: %w", redact(url), err)
	}
	return nc, nil
}

// redact hides user info in every URL of a comma-separated list: it may
// hold a password or a token.
func redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := neturl.Parse(p)
		switch {
		case err != nil:
			parts[i] = "<unparsable URL>"
		case u.User != nil:
			u.User = neturl.User("redacted")
			parts[i] = u.String()
		default:
			parts[i] = p
		}
	}
	return strings.Join(parts, ",")
}
