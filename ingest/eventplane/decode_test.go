package eventplane

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
)

type sample struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Expect  struct {
		PublisherID   uint64      `json:"publisher_id"`
		Sequence      uint64      `json:"sequence"`
		PublishedAt   uint64      `json:"published_at"`
		WorkerID      uint64      `json:"worker_id"`
		DpRank        uint32      `json:"dp_rank"`
		EventID       uint64      `json:"event_id"`
		Kind          string      `json:"kind"`
		Tier          string      `json:"tier"`
		Parent        *uint64     `json:"parent"`
		StartPosition *uint32     `json:"start_position"`
		Blocks        [][2]uint64 `json:"blocks"`
		Removed       []uint64    `json:"removed"`
		Decode        *uint64     `json:"active_decode_blocks"`
		Prefill       *uint64     `json:"active_prefill_tokens"`
		Used          *uint64     `json:"kv_used_blocks"`
	} `json:"expect"`
}

func loadSamples(t *testing.T) []sample {
	t.Helper()
	raw, err := os.ReadFile("testdata/samples.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Samples []sample }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Samples) < 7 {
		t.Fatalf("only %d samples", len(doc.Samples))
	}
	return doc.Samples
}

func frame(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSamplesAreTheBuildersOutput: the checked-in frames are exactly what
// the independent Python builder writes today, so a change to either is
// seen.
func TestSamplesAreTheBuildersOutput(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(pypeer.Python(), "testdata/dynamo_frames.py", "samples", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("builder: %v: %s", err, out)
	}
	for _, s := range loadSamples(t) {
		got, err := os.ReadFile(filepath.Join(dir, s.Name+".msgpack"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, frame(t, s.Name)) {
			t.Errorf("%s: checked-in frame differs from the builder's", s.Name)
		}
	}
}

// TestDecodeSamples reads every sample frame as the Python builder says
// Dynamo meant it.
func TestDecodeSamples(t *testing.T) {
	for _, s := range loadSamples(t) {
		t.Run(s.Name, func(t *testing.T) {
			data, x := frame(t, s.Name), s.Expect
			var env Envelope
			if strings.HasPrefix(s.Name, "load_") {
				if !IsLoadSubject(s.Subject) || IsKVEventsSubject(s.Subject) {
					t.Fatalf("subject %q not recognised as load", s.Subject)
				}
				e, l, err := DecodeLoad(data, schemas.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				env = e
				if l.WorkerID != x.WorkerID || l.DpRank != x.DpRank || !eqp(l.ActiveDecodeBlocks, x.Decode) ||
					!eqp(l.ActivePrefillTokens, x.Prefill) || !eqp(l.KvUsedBlocks, x.Used) {
					t.Errorf("load = %+v, want %+v", l, x)
				}
			} else {
				if !IsKVEventsSubject(s.Subject) || IsLoadSubject(s.Subject) {
					t.Fatalf("subject %q not recognised as kv-events", s.Subject)
				}
				f, err := DecodeKVEvent(data, schemas.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				env = f.Envelope
				ev := f.Event
				if f.Ignored != "" {
					t.Fatalf("ignored: %q", f.Ignored)
				}
				if ev.WorkerID != x.WorkerID || ev.Event.DpRank != x.DpRank || ev.Event.EventID != x.EventID ||
					ev.Event.Data.Kind.String() != x.Kind || string(ev.Tier()) != x.Tier {
					t.Errorf("event = %+v, want %+v", ev, x)
				}
				checkData(t, ev.Event.Data, x.Parent, x.StartPosition, x.Blocks, x.Removed)
			}
			if env.PublisherID != x.PublisherID || env.Sequence != x.Sequence || env.PublishedAt != x.PublishedAt {
				t.Errorf("envelope = %+v, want %+v", env, x)
			}
		})
	}
}

func checkData(t *testing.T, d schemas.KvCacheEventData, parent *uint64, start *uint32, blocks [][2]uint64, removed []uint64) {
	t.Helper()
	switch d.Kind {
	case schemas.KindStored:
		s := d.Stored
		if (s.ParentHash == nil) != (parent == nil) || parent != nil && uint64(*s.ParentHash) != *parent {
			t.Errorf("parent = %v, want %v", s.ParentHash, parent)
		}
		if (s.StartPosition == nil) != (start == nil) || start != nil && *s.StartPosition != *start {
			t.Errorf("start_position = %v, want %v", s.StartPosition, start)
		}
		if len(s.Blocks) != len(blocks) {
			t.Fatalf("%d blocks, want %d", len(s.Blocks), len(blocks))
		}
		for i, b := range blocks {
			if uint64(s.Blocks[i].BlockHash) != b[0] || uint64(s.Blocks[i].TokensHash) != b[1] {
				t.Errorf("block %d = %+v, want %v", i, s.Blocks[i], b)
			}
		}
	case schemas.KindRemoved:
		if len(d.Removed.BlockHashes) != len(removed) {
			t.Fatalf("removed %v, want %v", d.Removed.BlockHashes, removed)
		}
		for i, h := range removed {
			if uint64(d.Removed.BlockHashes[i]) != h {
				t.Errorf("removed[%d] = %d, want %d", i, d.Removed.BlockHashes[i], h)
			}
		}
	}
}

func eqp(a, b *uint64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// reason returns err's DecodeError reason, failing the test if err is not
// one.
func reason(t *testing.T, err error) string {
	t.Helper()
	var de *schemas.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, schemas.ErrMalformed) {
		t.Fatalf("error %v is not a DecodeError", err)
	}
	return de.Reason
}

// reenvelope wraps payload like the sample's envelope, with topic.
func reenvelope(topic string, payload []byte) []byte {
	b := msgp.AppendMapHeader(nil, 5)
	b = msgp.AppendString(b, "publisher_id")
	b = msgp.AppendUint64(b, 1)
	b = msgp.AppendString(b, "sequence")
	b = msgp.AppendUint64(b, 0)
	b = msgp.AppendString(b, "published_at")
	b = msgp.AppendUint64(b, 0)
	b = msgp.AppendString(b, "topic")
	b = msgp.AppendString(b, topic)
	b = msgp.AppendString(b, "payload")
	return msgp.AppendBytes(b, payload)
}

func TestDecodeRejects(t *testing.T) {
	good := frame(t, "kv_stored_device")
	env, err := DecodeEnvelope(good, schemas.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	load := frame(t, "load_worker")
	cases := []struct {
		name, want string
		data       []byte
		lim        schemas.Limits
		load       bool
	}{
		{"empty", "envelope not a msgpack map", nil, schemas.Limits{}, false},
		{"json", "envelope not a msgpack map", []byte(`{"worker_id":1}`), schemas.Limits{}, false},
		{"truncated", "envelope field of the wrong type", good[:len(good)-3], schemas.Limits{}, false},
		{"trailing", "trailing bytes after envelope", append(append([]byte{}, good...), 0xc0), schemas.Limits{}, false},
		{"too large", "message too large", good, schemas.Limits{MaxBytes: 16}, false},
		{"wrong topic", "envelope topic is not kv-events", reenvelope("kv_metrics", env.Payload), schemas.Limits{}, false},
		{"load topic", "envelope topic is not kv_metrics", reenvelope("kv-events", env.Payload), schemas.Limits{}, true},
		{"payload not a map", "router event not a msgpack map", reenvelope("kv-events", []byte{0x93, 1, 2, 3}), schemas.Limits{}, false},
		{"payload json", "router event not a msgpack map", reenvelope("kv-events", []byte(`{}`)), schemas.Limits{}, false},
		{"load payload json", "load payload not a msgpack map", reenvelope("kv_metrics", []byte(`{"worker_id":1}`)), schemas.Limits{}, true},
		{"load bad counter", "", load, schemas.Limits{MaxBytes: 8}, true},
		{"too many blocks", "too many blocks", good, schemas.Limits{MaxTokens: 1}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.load {
				_, _, err = DecodeLoad(c.data, c.lim)
			} else {
				_, err = DecodeKVEvent(c.data, c.lim)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if r := reason(t, err); c.want != "" && r != c.want {
				t.Errorf("reason %q, want %q", r, c.want)
			}
		})
	}
}

// payload builds a RouterEvent map from key/value appenders.
func payload(fields ...func([]byte) []byte) []byte {
	b := msgp.AppendMapHeader(nil, uint32(len(fields)))
	for _, f := range fields {
		b = f(b)
	}
	return b
}

func kv(key string, val func([]byte) []byte) func([]byte) []byte {
	return func(b []byte) []byte { return val(msgp.AppendString(b, key)) }
}

func u(v uint64) func([]byte) []byte { return func(b []byte) []byte { return msgp.AppendUint64(b, v) } }
func s(v string) func([]byte) []byte { return func(b []byte) []byte { return msgp.AppendString(b, v) } }
func raw(v []byte) func([]byte) []byte {
	return func(b []byte) []byte { return append(b, v...) }
}

func clearedEvent() func([]byte) []byte {
	return raw(payload(kv("event_id", u(1)), kv("data", s("cleared"))))
}

func TestRouterEventShapes(t *testing.T) {
	cases := []struct {
		name, reason, ignored string
		p                     []byte
	}{
		{"minimal: tier and dp_rank default", "", "", payload(kv("worker_id", u(3)), kv("event", clearedEvent()))},
		{"cleared as a map", "", "", payload(kv("worker_id", u(3)), kv("event", raw(payload(kv("event_id", u(1)),
			kv("data", raw(append(msgp.AppendString(msgp.AppendMapHeader(nil, 1), "cleared"), 0xc0))))))),
		},
		{"unknown keys skipped", "", "", payload(kv("worker_id", u(3)), kv("state_source", raw(payload(kv("x", u(1))))),
			kv("event", clearedEvent()))},
		{"cache owner ignored", "", IgnoreResidencyDomain, payload(kv("worker_id", u(3)), kv("residency_domain", s("cache_owner")),
			kv("event", clearedEvent()))},
		{"unknown tier ignored", "", IgnoreTier, payload(kv("worker_id", u(3)), kv("storage_tier", s("tape")), kv("event", clearedEvent()))},
		{"no worker", "missing worker_id", "", payload(kv("event", clearedEvent()))},
		{"no event", "missing event", "", payload(kv("worker_id", u(3)))},
		{"negative worker", "worker_id not an unsigned integer", "", payload(kv("worker_id", raw(msgp.AppendInt64(nil, -1))), kv("event", clearedEvent()))},
		{"domain nil", "residency_domain not a string", "", payload(kv("worker_id", u(3)), kv("residency_domain", raw([]byte{0xc0})), kv("event", clearedEvent()))},
		{"unknown tag", "unknown event tag", "", payload(kv("worker_id", u(3)), kv("event", raw(payload(kv("event_id", u(1)), kv("data", s("wiped"))))))},
		{"no data", "missing event data", "", payload(kv("worker_id", u(3)), kv("event", raw(payload(kv("event_id", u(1))))))},
		{"two variants", "event data must have exactly one variant key", "", payload(kv("worker_id", u(3)), kv("event", raw(payload(kv("event_id", u(1)),
			kv("data", raw(payload(kv("stored", raw([]byte{0x80})), kv("removed", raw([]byte{0x80}))))))))),
		},
		{"block without tokens_hash", "block misses block_hash or tokens_hash", "", payload(kv("worker_id", u(3)), kv("event", raw(payload(kv("event_id", u(1)),
			kv("data", raw(payload(kv("stored", raw(payload(kv("blocks", raw(append(msgp.AppendArrayHeader(nil, 1),
				payload(kv("block_hash", u(1)), kv("mm_extra_info", raw([]byte{0xc0})), kv("x_pad", s("0123456789abcdef")))...))))))))))))),
		},
		{"deep unknown field", "msgpack nested too deeply", "", payload(kv("worker_id", u(3)), kv("x", raw(deep(40))), kv("event", clearedEvent()))},
		{"huge block count", "truncated msgpack", "", payload(kv("worker_id", u(3)), kv("event", raw(payload(kv("event_id", u(1)),
			kv("data", raw(payload(kv("stored", raw(payload(kv("blocks", raw(msgp.AppendArrayHeader(nil, 1<<20))))))))))))),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, ign, err := DecodeRouterEvent(c.p, schemas.Limits{})
			if c.reason != "" {
				if err == nil {
					t.Fatalf("accepted: %+v", ev)
				}
				if r := reason(t, err); r != c.reason {
					t.Fatalf("reason %q, want %q", r, c.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ign != c.ignored || ev == nil {
				t.Fatalf("ignored %q (event %v), want %q", ign, ev, c.ignored)
			}
			if ev.WorkerID != 3 || (ign == "" && ev.Tier() != schemas.TierDevice) || ev.Event.Data.Kind != schemas.KindCleared {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}

// deep is n nested one-element arrays around nil.
func deep(n int) []byte {
	b := bytes.Repeat([]byte{0x91}, n)
	return append(b, 0xc0)
}

func TestEnvelopeDepth(t *testing.T) {
	b := msgp.AppendMapHeader(nil, 1)
	b = msgp.AppendString(b, "published_at_ns")
	b = append(b, deep(40)...)
	if _, err := DecodeEnvelope(b, schemas.Limits{}); err == nil || reason(t, err) != "msgpack nested too deeply" {
		t.Fatalf("deep unknown envelope field: %v", err)
	}
	// Within the limit an unknown field is skipped (the envelope then
	// lacks its own fields).
	b = msgp.AppendMapHeader(nil, 1)
	b = msgp.AppendString(b, "published_at_ns")
	b = append(b, deep(8)...)
	if _, err := DecodeEnvelope(b, schemas.Limits{}); err == nil || reason(t, err) != "envelope field missing" {
		t.Fatalf("shallow unknown envelope field: %v", err)
	}
}
