package natsconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
)

// Defaults of Dial's retries.
const (
	// DefaultConnectTimeout is the connect timeout `hintstream run` uses:
	// long enough for a NATS pod or container started at the same time to
	// come up, short enough that a wrong URL fails within a probe period.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultDialInitialWait is the first pause between attempts; it
	// doubles (with jitter) up to DefaultDialMaxWait.
	DefaultDialInitialWait = 250 * time.Millisecond
	DefaultDialMaxWait     = 5 * time.Second
)

// ErrConnectTimeout is returned by Dial when no attempt succeeded within
// Config.ConnectTimeout; the last attempt's error is wrapped with it.
var ErrConnectTimeout = errors.New("natsconn: NATS not reachable within the connect timeout")

// Dial is Connect retried with exponential backoff until c.ConnectTimeout
// has passed, so hintstream can start before its NATS server (compose and
// Kubernetes give no start order). Each failed attempt is logged to
// c.Logger with its number, its error and the pause before the next.
// Errors that a retry cannot mend are returned at once: a configuration
// error (ErrConfig), a refused authorization and a server certificate
// that fails verification. When ctx ends first,
// Dial returns ctx's error wrapped with the last attempt's.
func Dial(ctx context.Context, c Config, extra ...nats.Option) (*nats.Conn, error) {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	start := time.Now()
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(DefaultDialInitialWait),
		backoff.WithMaxInterval(DefaultDialMaxWait), backoff.WithMaxElapsedTime(0))
	for attempt := 1; ; attempt++ {
		nc, err := Connect(c, extra...)
		if err == nil {
			if attempt > 1 {
				log.Info("nats connected", "url", nc.ConnectedUrlRedacted(), "attempt", attempt,
					"waited", time.Since(start).Round(time.Millisecond).String())
			}
			return nc, nil
		}
		if c.ConnectTimeout <= 0 || permanent(err) {
			return nil, err
		}
		left := c.ConnectTimeout - time.Since(start)
		if left <= 0 {
			return nil, fmt.Errorf("%w (%v, %d attempts): %w", ErrConnectTimeout, c.ConnectTimeout, attempt, err)
		}
		wait := min(b.NextBackOff(), left)
		log.Warn("nats not reachable, retrying", "attempt", attempt, "err", err, "retry_in", wait.Round(time.Millisecond).String(),
			"gives_up_in", left.Round(time.Millisecond).String())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("natsconn: stopped while waiting for NATS: %w (last attempt: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// permanent reports errors that the same attempt would meet again: bad
// configuration, refused credentials, a server certificate that does not
// verify.
func permanent(err error) bool {
	var verify *tls.CertificateVerificationError
	return errors.Is(err, ErrConfig) || errors.Is(err, nats.ErrAuthorization) ||
		errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) ||
		errors.As(err, &verify)
}
