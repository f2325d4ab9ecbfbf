package observe

import (
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/ahead"
)

func TestInspectAhead(t *testing.T) {
	src, _ := inspectFixture(t)
	sc, err := ahead.New(ahead.Config{KVBytesPerToken: 2, WarmupTokens: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	sc.Request(t0, ahead.Turn{RequestID: "r", Session: "s", Tokens: []uint32{1, 2, 3}})
	src.Ahead = func() (ahead.Stats, bool) { return sc.Stats(), true }
	var v AheadView
	if code, raw := call(t, "GET", serve(t, src)+"/v1/ahead", nil, &v); code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	if v.Stats.Followed != 1 || v.Stats.MaxWaste != ahead.DefaultMaxWaste || v.Stats.AllowanceBytes != 20 {
		t.Fatalf("view %+v", v)
	}
	src.Ahead = func() (ahead.Stats, bool) { return ahead.Stats{}, false }
	if code, raw := call(t, "GET", serve(t, src)+"/v1/ahead", nil, nil); code != 404 || !strings.Contains(raw, "--prefetch-ahead") {
		t.Fatalf("off: %d %s", code, raw)
	}
}
