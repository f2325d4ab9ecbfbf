package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/xxh3"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// DefaultContextBucket is the JetStream KV bucket in which the members of
// a group share each program's last turn, so that the member a tool event
// is delivered to can act on a program whose turn another member
// consumed.
const DefaultContextBucket = "hintstream_agent_programs"

// Bucket defaults: a program's turn is kept an hour (a tool call longer
// than that gets no hint from a member that did not see the turn), in at
// most 256 MiB; a turn of more than DefaultMaxSharedTokens tokens is not
// shared (it would not fit a NATS message).
const (
	DefaultContextTTL      = time.Hour
	DefaultContextMaxBytes = 256 << 20
	DefaultMaxSharedTokens = 100_000
)

// Half is what one event of a turn says of its program: a request (the
// prompt) or its response (the output and the worker). The member that
// consumed each event writes it; the two halves of one turn name the
// same request.
type Half struct {
	Program      string   `json:"program"` // schemas.AgentSession
	RequestID    string   `json:"request_id"`
	WorkflowType string   `json:"workflow_type,omitempty"`
	Session      string   `json:"session,omitempty"`
	Model        string   `json:"model,omitempty"`
	Lora         string   `json:"lora,omitempty"`
	Salt         string   `json:"salt,omitempty"`
	Speculate    bool     `json:"speculate,omitempty"`
	Tokens       []uint32 `json:"tokens"` // the prompt, or the output
	WorkerID     uint64   `json:"worker_id,omitempty"`
	DpRank       uint32   `json:"dp_rank,omitempty"`
	ToolCall     bool     `json:"tool_call,omitempty"`
}

// ContextStore shares the halves of programs' last turns in a group.
type ContextStore interface {
	Put(ctx context.Context, response bool, h Half) error
	// Get returns program's request and response halves; a nil half was
	// not stored (or expired).
	Get(ctx context.Context, program string) (req, resp *Half, err error)
}

// KVStore is a ContextStore in a JetStream KV bucket.
type KVStore struct{ kv jetstream.KeyValue }

// OpenContextStore opens bucket (DefaultContextBucket when ""), creating
// it when absent.
func OpenContextStore(ctx context.Context, js jetstream.JetStream, bucket string) (*KVStore, error) {
	if bucket == "" {
		bucket = DefaultContextBucket
	}
	kv, _, err := streams.OpenKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: DefaultContextTTL,
		MaxBytes: DefaultContextMaxBytes, Description: "hintstream: agent programs' last turn, shared by the group"})
	if err != nil {
		return nil, fmt.Errorf("agent context bucket %s: %w", bucket, err)
	}
	return &KVStore{kv: kv}, nil
}

// contextKey is program's key in the bucket: program ids may hold any
// character, bucket keys may not. The half stored names its program, so
// a hash collision is told apart.
func contextKey(program string, response bool) string {
	k := strconv.FormatUint(xxh3.HashString(program), 16)
	if response {
		return k + ".r"
	}
	return k + ".q"
}

// Put stores h as its program's request or response half.
func (s *KVStore) Put(ctx context.Context, response bool, h Half) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = s.kv.Put(ctx, contextKey(h.Program, response), b)
	return err
}

// Get returns program's two halves.
func (s *KVStore) Get(ctx context.Context, program string) (req, resp *Half, err error) {
	get := func(response bool) (*Half, error) {
		e, err := s.kv.Get(ctx, contextKey(program, response))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return decodeHalf(e.Value(), program), nil
	}
	if req, err = get(false); err != nil {
		return nil, nil, err
	}
	if resp, err = get(true); err != nil {
		return nil, nil, err
	}
	return req, resp, nil
}

// decodeHalf decodes a stored half of program's turn; nil when it is
// not one (not JSON of a Half, another program's under a colliding key,
// or over DefaultMaxSharedTokens): nothing is shared then.
func decodeHalf(b []byte, program string) *Half {
	var h Half
	if err := json.Unmarshal(b, &h); err != nil || h.Program != program || len(h.Tokens) > DefaultMaxSharedTokens {
		return nil
	}
	return &h
}

// Share makes the tracker write each agent turn's halves to store and
// read a program's turn back from it before acting on its tool event.
// It must be called before the tracker is given events.
func (t *Tracker) Share(store ContextStore) { t.store = store }

// shareRequest writes req's half (a request of program c). Not under mu.
func (t *Tracker) shareRequest(req *schemas.RequestEvent, c *schemas.AgentContext) {
	if t.store == nil || len(req.TokenIDs) > DefaultMaxSharedTokens {
		return
	}
	h := Half{Program: schemas.AgentSession(c), RequestID: req.RequestID, WorkflowType: c.WorkflowTypeID,
		Session: req.SessionID, Model: req.Model, Lora: req.LoraName, Salt: req.CacheSalt,
		Speculate: req.NvExt.Hints().SpeculativePrefill, Tokens: req.TokenIDs}
	t.put(false, h)
}

// shareResponse writes resp's half, program being its program's key.
// Not under mu.
func (t *Tracker) shareResponse(resp *schemas.ResponseEvent, program string) {
	if t.store == nil || program == "" || len(resp.OutputTokenIDs) > DefaultMaxSharedTokens {
		return
	}
	h := Half{Program: program, RequestID: resp.RequestID, Model: resp.Model, Session: resp.SessionID,
		Tokens: resp.OutputTokenIDs, WorkerID: resp.WorkerID, DpRank: resp.DpRank,
		ToolCall: resp.FinishReason == "tool_calls" || len(resp.ToolCalls) > 0}
	t.put(true, h)
}

func (t *Tracker) put(response bool, h Half) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := t.store.Put(ctx, response, h); err != nil {
		t.log.Warn("agent turn not shared", "session", h.Program, "request_id", h.RequestID, "err", err)
	}
}

// hydrate reads program's last turn back from the store and, when it is
// complete and newer than what this member holds (or this member holds
// none), makes it the program's context. Not under mu.
func (t *Tracker) hydrate(ctx context.Context, program, workflowType string) {
	if t.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	q, r, err := t.store.Get(ctx, program)
	if err != nil {
		t.log.Warn("agent turn not read back", "session", program, "err", err)
		return
	}
	if q == nil || r == nil || q.RequestID != r.RequestID {
		return // this turn is not complete in the store
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.program(program, workflowType)
	if p.reqID == q.RequestID && p.haveResp {
		return // this member saw the turn itself
	}
	if p.reqID != "" && t.byReq[p.reqID] == p {
		delete(t.byReq, p.reqID)
	}
	if p.workflowType == "" {
		p.workflowType = q.WorkflowType
	}
	p.session, p.model, p.lora, p.salt, p.reqID = q.Session, q.Model, q.Lora, q.Salt, q.RequestID
	p.prompt = append(p.prompt[:0], q.Tokens...)
	p.output = append(p.output[:0], r.Tokens...)
	p.workerID, p.dpRank, p.haveResp, p.speculate = r.WorkerID, r.DpRank, true, q.Speculate
	p.pinned = r.ToolCall && t.h.PinTTL("") > 0
	t.byReq[q.RequestID] = p
}

// Decide acts on one tool event delivered by the group's shared consumer
// (consumers.AgentEventConsumer): a malformed one is rejected (counted,
// dead-lettered), any other done.
func (t *Tracker) Decide(ctx context.Context, _ engine.Delivery, m engine.Message) engine.Outcome {
	rec, err := agentevents.Decode(m.Data, m.Header.Get("Content-Type"))
	if err != nil {
		t.m.Malformed.Inc(reasonOf(err))
		return engine.Rejected(err)
	}
	t.OnRecord(ctx, rec)
	return engine.Done()
}
