package main

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/internal/retry"
	"github.com/hintstream/hintstream/service"
)

// Start-up retry after a missing permission: first wait, then doubling to
// the longest, each wait jittered (retry.Doubling).
const (
	permissionRetryFirst = time.Second
	permissionRetryMax   = 30 * time.Second
)

// startService starts a service from cfg. When start-up fails because the
// NATS server refuses a permission hintstream needs, it says so once, at
// ERROR, and does not exit: a supervisor would only restart it into the
// same refusal, a crash loop that buries the message. It tries again with
// backoff, quietly (each retry is a DEBUG line), until the permission is
// granted or ctx ends (then it returns nil, nil). Any other error is
// returned at once.
func startService(ctx context.Context, cfg service.Config, log *slog.Logger) (*service.Service, error) {
	muted := &atomic.Bool{}
	cfg.Logger = slog.New(muteHandler{Handler: cfg.Logger.Handler(), muted: muted})
	svc := service.New(cfg)
	err := svc.Start(ctx)
	if err == nil || !errors.Is(err, service.ErrPermissionDenied) {
		return svc, err
	}
	log.Error("hintstream cannot start: a NATS permission it needs is missing; not exiting, retrying quietly until it is granted",
		"err", err, "retry_max_interval", permissionRetryMax)
	muted.Store(true)
	wait := retry.Doubling(permissionRetryFirst, permissionRetryMax)
	for attempt := 2; ; attempt++ {
		if !retry.Wait(ctx, wait.NextBackOff()) {
			return nil, nil
		}
		svc = service.New(cfg)
		err := svc.Start(ctx)
		switch {
		case err == nil:
			muted.Store(false)
			log.Info("hintstream started: the missing NATS permission was granted", "attempt", attempt)
			return svc, nil
		case errors.Is(err, service.ErrPermissionDenied):
			log.Debug("start-up retry: permission still missing", "attempt", attempt, "err", err)
		case ctx.Err() != nil:
			return nil, nil
		default:
			muted.Store(false)
			return nil, err
		}
	}
}

// muteHandler drops every record while muted is set: the retries of a
// start-up that lacks a permission would repeat the same lines.
type muteHandler struct {
	slog.Handler
	muted *atomic.Bool
}

func (h muteHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return !h.muted.Load() && h.Handler.Enabled(ctx, l)
}

func (h muteHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return muteHandler{Handler: h.Handler.WithAttrs(as), muted: h.muted}
}

func (h muteHandler) WithGroup(name string) slog.Handler {
	return muteHandler{Handler: h.Handler.WithGroup(name), muted: h.muted}
}
