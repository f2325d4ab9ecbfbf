package service

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hintstream/hintstream/state/snapshots"
	"github.com/nats-io/nats.go"
)

// TestParseExtraStreams: the header written for extra KV-event streams
// reads back, and malformed entries are left out (their stream replayed).
func TestParseExtraStreams(t *testing.T) {
	at := time.Unix(1700000000, 123456789).UTC()
	h := nats.Header{}
	h.Set(snapshots.HeaderExtra, fmt.Sprintf("KV_B=20@%d,KV_C=x@1,KV_D=5,=1@2,KV_E=7@%d", at.UnixNano(), at.UnixNano()))
	got := parseExtraStreams(h)
	if len(got) != 2 || got["KV_B"].seq != 20 || !got["KV_B"].created.Equal(at) || got["KV_E"].seq != 7 {
		t.Fatalf("parsed %+v", got)
	}
	if _, ok := got["KV_C"]; ok {
		t.Fatal("a malformed sequence was kept")
	}
}

func TestValidateKVStreams(t *testing.T) {
	c := Config{}.Defaults()
	for _, bad := range [][]string{{""}, {"a b"}, {"KV_B", "KV_B"}, {c.Streams.KVEvents.Name}, {"a=b"}} {
		c.KVStreams = bad
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("--kv-streams %q: %v, want ErrInvalidConfig", bad, err)
		}
	}
	c.KVStreams = []string{"KV_B", "KV_C"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseExtraStreams(f *testing.F) {
	f.Add("KV_B=20@1700000000000000000,KV_C=1@2")
	f.Add("=,@,==@@")
	f.Fuzz(func(t *testing.T, v string) {
		h := nats.Header{}
		h.Set(snapshots.HeaderExtra, v)
		for name := range parseExtraStreams(h) {
			if name == "" {
				t.Fatal("an entry without a stream name kept")
			}
		}
	})
}
