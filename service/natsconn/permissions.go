package natsconn

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
)

// permissionLog turns the server's permission refusals, which nats.go
// reports asynchronously (a refused publish has no reply and a request
// to it only times out), into one clear ERROR line per refused subject
// and direction, however often hintstream tries again.
type permissionLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]bool
}

// handle logs err once if it is a permission refusal and reports whether
// it was one.
func (p *permissionLog) handle(err error) bool {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return false
	}
	p.mu.Lock()
	first := !p.seen[err.Error()]
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	p.seen[err.Error()] = true
	p.mu.Unlock()
	if first {
		p.log.Error("NATS permission missing: the server refused this user; grant it (see deploy/nats/nats-server.conf for what hintstream needs)",
			"err", err)
	}
	return true
}
