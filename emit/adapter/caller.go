package adapter

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hintstream/hintstream/internal/retry"
	"github.com/hintstream/hintstream/observe/metrics"
)

// Caller makes the HTTP calls hints become, as the adapter makes its
// engine calls: a JSON POST bounded by Timeout; after a failed
// connection or a 5xx, retried with doubling, jittered waits while the
// hint has not expired, never past it; an answer read at most
// maxErrorBody + maxDrainBody bytes, so an endless body costs 64 KiB;
// a redirect followed only to the same scheme, host and port (the body
// carries a prompt). The adapter's engine calls and run's LMCache
// controller pins (package lmcachepin) share it: every target meets a
// bad answer the same way (hostile_test.go).
type Caller struct {
	Client     *http.Client // NewHTTPClient's unless set
	Base       string       // scheme://host:port with no trailing slash, put before each path; "": paths are URLs
	Peer       string       // what is called, for logs: "engine", "lmcache controller"
	Timeout    time.Duration
	RetryDelay time.Duration // first retry wait; doubles up to maxRetryDelay
	Log        *slog.Logger
	Now        func() time.Time
	// LogAttrs are added to every log line (the adapter's "engine").
	LogAttrs []any
	// OnRetry, OnFailed and OnAnswer, when set, count: each attempt
	// after the first, each failed attempt by reason
	// (metrics.AdapterFail*), and each answered attempt's duration.
	OnRetry  func()
	OnFailed func(reason string)
	OnAnswer func(seconds float64)
}

// NewHTTPClient is the client a Caller uses unless given one: no proxy
// (the peer is beside hintstream or the worker, never behind a proxy), a
// 5 s dial timeout, keep-alive connections for maxIdle callers, and
// same-host redirects only.
func NewHTTPClient(maxIdle int) *http.Client {
	return &http.Client{CheckRedirect: sameHostRedirects, Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: maxIdle,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// Call outcomes besides "" (answered 2xx) and the failure reasons of an
// attempt (metrics.AdapterFail*): the hint expired before a call could
// be made or retried, or ctx ended.
const (
	CallExpired = metrics.AdapterDropExpired
	CallClosed  = metrics.AdapterDropClosed
)

// Do POSTs body to path (with header's values added), retrying a failed connection or a 5xx while
// now is before deadline. It returns "" once answered 2xx, CallExpired
// when the deadline passed first, CallClosed when ctx ended, or the
// reason of an attempt a retry cannot help (refused, redirected,
// timeout).
func (c *Caller) Do(ctx context.Context, path string, header http.Header, body []byte, msgID string, deadline time.Time) string {
	b := retry.Doubling(c.RetryDelay, maxRetryDelay)
	for attempt := 0; ; attempt++ {
		if !c.Now().Before(deadline) {
			return CallExpired
		}
		if attempt > 0 && c.OnRetry != nil {
			c.OnRetry()
		}
		reason, retryable := c.post(ctx, path, header, body, msgID)
		switch {
		case reason == "":
			return ""
		case ctx.Err() != nil:
			return CallClosed
		}
		if c.OnFailed != nil {
			c.OnFailed(reason)
		}
		if !retryable {
			return reason
		}
		wait := min(b.NextBackOff(), deadline.Sub(c.Now()))
		if wait <= 0 {
			return CallExpired
		}
		if !retry.Wait(ctx, wait) {
			return CallClosed
		}
	}
}

// post makes one call and classifies its outcome: "" for 2xx, else a
// failure reason and whether a retry may help.
func (c *Caller) post(ctx context.Context, path string, header http.Header, body []byte, msgID string) (reason string, retry bool) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, bytes.NewReader(body))
	if err != nil {
		return metrics.AdapterFailUnreachable, false
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	log := c.Log.With(c.LogAttrs...)
	start := time.Now()
	resp, err := c.Client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			log.Warn(c.Peer+" call timed out", "message_id", msgID, "timeout", c.Timeout)
			return metrics.AdapterFailTimeout, false
		}
		log.Debug(c.Peer+" unreachable", "message_id", msgID, "err", err)
		return metrics.AdapterFailUnreachable, true
	}
	defer resp.Body.Close() // unread past maxDrainBody: the connection is closed, not reused
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBody)) // lets the connection be reused
	if c.OnAnswer != nil {
		c.OnAnswer(time.Since(start).Seconds())
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		log.Debug(c.Peer+" call answered", "message_id", msgID, "path", path, "took", time.Since(start))
		return "", false
	case resp.StatusCode >= 500:
		log.Debug(c.Peer+" error", "message_id", msgID, "status", resp.StatusCode)
		return metrics.AdapterFailServerError, true
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		// Only a redirect sameHostRedirects refused ends here.
		log.Warn(c.Peer+" redirect not followed", "message_id", msgID,
			"status", resp.StatusCode, "location", truncate(resp.Header.Get("Location"), maxErrorBody))
		return metrics.AdapterFailRedirected, false
	}
	log.Warn(c.Peer+" refused the call", "message_id", msgID, "path", path,
		"status", resp.StatusCode, "body", string(bytes.ToValidUTF8(head, nil)))
	return metrics.AdapterFailRefused, false
}
