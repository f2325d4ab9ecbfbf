package pins

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// sentHints is an actions.Sender that keeps what it is given.
type sentHints []actions.Hint

func (s *sentHints) Send(_ string, h actions.Hint) error {
	*s = append(*s, h)
	return nil
}

// pinKeysOf decodes the keys of the one kv.pin in body.
func pinKeysOf(t *testing.T, body []byte) schemas.PinPayload {
	t.Helper()
	var env schemas.KvHintsEnvelope
	if rest, err := env.UnmarshalMsg(body); err != nil || len(rest) != 0 || len(env.Actions) != 1 {
		t.Fatalf("envelope: %v, %d trailing bytes, %d actions", err, len(rest), len(env.Actions))
	}
	var pl schemas.PinPayload
	if _, err := pl.UnmarshalMsg(env.Actions[0].Payload); err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestPinKeysFromDepsKeys: a pin's keys are what Deps.Keys makes of the
// response's request, its prompt and output, its namespace and the caps;
// without Deps.Keys, what actions.ObjectKeysCapped makes of them; a pin
// cut to the caps counts the tokens of the pages it keeps either way.
func TestPinKeysFromDepsKeys(t *testing.T) {
	layout := suffixLayout(4, 2)
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	output := []uint32{10, 11, 12}
	ns := actions.Namespace{ExtraKey: "x", CacheSalt: "salt"}
	type call struct {
		id       string
		prompt   []uint32
		output   []uint32
		ns       actions.Namespace
		maxKeys  int
		maxBytes int
	}
	var calls []call
	memo := func(id string, l *schemas.ObjectLayout, prompt, output []uint32, ns actions.Namespace, maxKeys, maxBytes int) ([]string, int, error) {
		calls = append(calls, call{id, slices.Clone(prompt), slices.Clone(output), ns, maxKeys, maxBytes})
		return actions.ObjectKeysCapped(l, append(slices.Clone(prompt), output...), ns, maxKeys, maxBytes)
	}
	for _, c := range []struct {
		name    string
		keys    KeysFunc
		maxKeys int
		tokens  int64 // the pin's
	}{{"default", nil, 100, 12}, {"injected", memo, 100, 12}, {"default cut", nil, 4, 8}, {"injected cut", memo, 4, 8}} {
		t.Run(c.name, func(t *testing.T) {
			want, _, err := actions.ObjectKeysCapped(layout, append(slices.Clone(prompt), output...), ns, c.maxKeys, 0)
			if err != nil || len(want) != 2*int(c.tokens)/4 {
				t.Fatalf("ObjectKeysCapped: %d keys, %v; want 2 a page", len(want), err)
			}
			var sent sentHints
			p := New(Config{MaxPinKeys: c.maxKeys, MaxPinBytes: 1 << 20}, Deps{Endpoint: "inproc://pin", Sender: &sent, Slots: NewMemSlots(),
				Counters: metrics.New(), Log: discard(), Keys: c.keys,
				Index:   &requestsInMemory{reqs: map[string]*schemas.RequestEvent{}, ents: map[string]IndexEntry{}},
				Workers: oneWorker{1: {WorkerID: 1, ObjectLayout: layout}}})
			ctx := context.Background()
			req := &schemas.RequestEvent{RequestID: "r1", SessionID: "s", TokenIDs: prompt, ExtraKey: ns.ExtraKey, CacheSalt: ns.CacheSalt}
			if err := p.OnRequest(ctx, 1, time.Now(), req); err != nil {
				t.Fatal(err)
			}
			queued, err := p.OnResponse(ctx, &schemas.ResponseEvent{RequestID: "r1", SessionID: "s", WorkerID: 1, OutputTokenIDs: output,
				FinishReason: "tool_calls", CompletedAtMs: time.Now().UnixMilli()}, Arrival{Time: time.Now(), Delivered: 1})
			if err != nil || !queued || len(sent) != 1 {
				t.Fatalf("queued %v, err %v, %d hints sent; want one pin", queued, err, len(sent))
			}
			if pl := pinKeysOf(t, sent[0].Body); !slices.Equal(pl.Keys, want) || pl.Tokens != c.tokens {
				t.Fatalf("pin keys %q, tokens %d; want %q, %d", pl.Keys, pl.Tokens, want, c.tokens)
			}
			if cut := p.Counters.PinsCut.Value(); (cut == 1) != (c.tokens < 12) {
				t.Fatalf("pins.cut %d", cut)
			}
		})
	}
	if len(calls) != 2 {
		t.Fatalf("Deps.Keys called %d times, want twice", len(calls))
	}
	if c := calls[0]; c.id != "r1" || !slices.Equal(c.prompt, prompt) || !slices.Equal(c.output, output) || c.ns != ns ||
		c.maxKeys != 100 || c.maxBytes != 1<<20 {
		t.Fatalf("Deps.Keys called with %+v", c)
	}
}
