package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Registration through hintstream. nats-server permissions filter
// subjects, never headers, so a user allowed to publish on its own key
// $KV.<bucket>.<id> may still add "Nats-Rollup: all" and wipe every
// record, and a bucket with per-key TTL cannot refuse roll-ups (the
// server turns AllowRollup back on for any stream with
// SubjectDeleteMarkerTTL). A least-privilege worker therefore never
// writes the bucket: it asks on <prefix>.<its id>, a subject its user
// alone may publish on, and a Writer (every hintstream member runs one)
// checks the record and stores it. Only the body is taken: headers of
// the request never reach the bucket.
const (
	// DefaultRegisterPrefix is where workers ask: <prefix>.<worker id>.
	DefaultRegisterPrefix = "hintstream.register"
	// WriterQueue is the queue group of Writers: one member answers.
	WriterQueue = "hintstream-registry-writer"
	// HeaderRegisterOp is "put" (default) or "delete".
	HeaderRegisterOp = "Hintstream-Register-Op"
	// HeaderRegisterTTL asks for the record to expire after this Go
	// duration unless stored again (capped at MaxRegisterTTL).
	HeaderRegisterTTL = "Hintstream-Register-TTL"
	// MaxRegisterTTL is the longest record TTL a worker may ask for.
	MaxRegisterTTL = 10 * time.Minute
)

// WriterReply is a Writer's answer: empty Error means stored.
type WriterReply struct {
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"` // InvalidReason of a refused record
}

// Writer stores the records workers ask it to store, after the checks
// the Registry applies when reading them (so a refused record never
// reaches the bucket) plus the subject's worker id.
type Writer struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	reg    *Registry
	prefix string
	log    *slog.Logger
}

// NewWriter returns a Writer for reg's bucket answering on prefix
// (DefaultRegisterPrefix when empty). It subscribes only in Run.
func NewWriter(nc *nats.Conn, js jetstream.JetStream, reg *Registry, prefix string, log *slog.Logger) (*Writer, error) {
	if nc == nil || js == nil || reg == nil {
		return nil, errors.New("registry: NewWriter needs a connection, JetStream and a Registry")
	}
	if prefix == "" {
		prefix = DefaultRegisterPrefix
	}
	if strings.ContainsAny(prefix, "*> \t") || strings.HasSuffix(prefix, ".") || strings.HasPrefix(prefix, ".") {
		return nil, fmt.Errorf("registry: registration prefix %q is not a literal subject", prefix)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Writer{nc: nc, js: js, reg: reg, prefix: prefix, log: log.With("bucket", reg.bucket)}, nil
}

// Run answers requests until ctx ends.
func (w *Writer) Run(ctx context.Context) error {
	sub, err := w.nc.QueueSubscribe(w.prefix+".*", WriterQueue, func(m *nats.Msg) { w.handle(ctx, m) })
	if err != nil {
		return fmt.Errorf("registry: subscribe %s.*: %w", w.prefix, err)
	}
	<-ctx.Done()
	_ = sub.Drain()
	return nil
}

func (w *Writer) handle(ctx context.Context, m *nats.Msg) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	reply := w.serve(ctx, m)
	if reply.Error != "" {
		w.log.Warn("worker registration refused", "subject", m.Subject, "reason", reply.Reason, "err", reply.Error)
	}
	if m.Reply != "" {
		b, _ := json.Marshal(reply)
		_ = m.Respond(b)
	}
}

func (w *Writer) serve(ctx context.Context, m *nats.Msg) WriterReply {
	refuse := func(err error) WriterReply {
		w.reg.check.refused(err)
		return WriterReply{Error: err.Error(), Reason: InvalidReason(err)}
	}
	id, err := parseKey(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
	if err != nil {
		return refuse(fmt.Errorf("%w: %w", errBadKey, err))
	}
	switch op := m.Header.Get(HeaderRegisterOp); op {
	case "delete":
		if err := w.reg.kv.Delete(ctx, Key(id)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return WriterReply{Error: err.Error()}
		}
		return WriterReply{}
	case "", "put":
	default:
		return WriterReply{Error: fmt.Sprintf("unknown %s %q", HeaderRegisterOp, op)}
	}
	rec, err := w.reg.decode(id, nil, m.Data)
	if err == nil {
		err = w.reg.checkClaims(id, rec.HintEndpoints)
	}
	if err != nil {
		return refuse(err)
	}
	var ttl time.Duration
	if h := m.Header.Get(HeaderRegisterTTL); h != "" {
		if ttl, err = time.ParseDuration(h); err != nil || ttl <= 0 {
			return WriterReply{Error: fmt.Sprintf("%s %q: want a positive duration", HeaderRegisterTTL, h)}
		}
		ttl = min(ttl, MaxRegisterTTL)
	}
	if ttl > 0 {
		err = PutTTL(ctx, w.js, w.reg.kv, *rec, ttl)
	} else {
		err = Put(ctx, w.reg.kv, *rec)
	}
	if err != nil {
		return WriterReply{Error: err.Error()}
	}
	return WriterReply{}
}

// Ask sends one registration request on prefix (DefaultRegisterPrefix
// when empty) for rec (nil with del: delete id's record) and returns the
// Writer's refusal as an error wrapping ErrRefused.
func Ask(ctx context.Context, nc *nats.Conn, prefix string, id uint64, rec *schemas.WorkerRecord, ttl time.Duration) error {
	if prefix == "" {
		prefix = DefaultRegisterPrefix
	}
	m := nats.NewMsg(prefix + "." + Key(id))
	if rec == nil {
		m.Header.Set(HeaderRegisterOp, "delete")
	} else {
		b, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("registry: encode worker %d: %w", id, err)
		}
		m.Data = b
		if ttl > 0 {
			m.Header.Set(HeaderRegisterTTL, ttl.String())
		}
	}
	resp, err := nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return fmt.Errorf("registry: no hintstream member answers on %s: %w", m.Subject, err)
		}
		return fmt.Errorf("registry: register worker %d: %w", id, err)
	}
	var r WriterReply
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return fmt.Errorf("registry: register worker %d: unreadable reply: %w", id, err)
	}
	if r.Error != "" {
		return fmt.Errorf("%w (%s): %s", ErrRefused, r.Reason, r.Error)
	}
	return nil
}

// ErrRefused means a Writer refused a registration; the error says why.
var ErrRefused = errors.New("registry: registration refused")
