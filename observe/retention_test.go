package observe

import (
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/retention"
	"github.com/hintstream/hintstream/schemas"
)

func TestInspectRetention(t *testing.T) {
	src, _ := inspectFixture(t)
	p, err := retention.New(retention.Config{Budget: 512 * schemas.DefaultKVBytesPerToken, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 3 {
		p.Request(t0.Add(time.Duration(i)*time.Second), "s1", []string{"k0", "k1"}, 512)
	}
	p.Plan(t0.Add(3 * time.Second))
	src.Retention = func() ([]retention.Pinned, retention.Stats, bool) {
		return p.Top(RetentionTop), p.Stats(), true
	}
	var v RetentionView
	if code, raw := call(t, "GET", serve(t, src)+"/v1/retention", nil, &v); code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	if len(v.Pinned) != 1 || v.Pinned[0].Key != "k0" || v.Pinned[0].Reason != "shared" || v.Pinned[0].Bytes != 512*schemas.DefaultKVBytesPerToken ||
		v.Stats.PinnedPages != 1 || v.Stats.Plans != 1 {
		t.Fatalf("view %+v", v)
	}
	src.Retention = func() ([]retention.Pinned, retention.Stats, bool) { return nil, retention.Stats{}, false }
	if code, raw := call(t, "GET", serve(t, src)+"/v1/retention", nil, nil); code != 404 || !strings.Contains(raw, "planner is off") {
		t.Fatalf("planner off: %d %s", code, raw)
	}
}
