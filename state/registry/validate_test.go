package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
)

// reasons counts WithOnInvalid calls.
type reasons struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *reasons) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[reason]++
}

func (r *reasons) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

// TestRegistryRefusesBadEndpointsWithReasons writes, straight into the
// bucket (as a careless neighbour would, past Put's check), the records
// issue 19 found accepted silently; each is refused and counted under its
// reason, and a good record among them is kept.
func TestRegistryRefusesBadEndpointsWithReasons(t *testing.T) {
	ctx, js, kv := setup(t)
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("tcp://10.0.0.7:%d", 10000+i)
	}
	manyJSON, _ := json.Marshal(many)
	bad := map[string]string{
		"1": `["inproc://rank0"]`,
		"2": `["tcp://127.0.0.1:99999"]`,
		"3": `["tcp://0.0.0.0:1"]`,
		"4": `["tcp://` + strings.Repeat("h", 10<<10) + `:1"]`,
		"5": string(manyJSON),
		"6": `["ipc:///run/sched.sock"]`,
		"7": `["tcp://*:5570"]`,
	}
	for key, eps := range bad {
		putRaw(t, ctx, kv, key, `{"worker_id":`+key+`,"model":"m","kv_block_size":16,"hint_endpoints":`+eps+`}`)
	}
	putRaw(t, ctx, kv, "8", `{"worker_id":9,"model":"m","kv_block_size":16,"hint_endpoints":["tcp://h:1"]}`)
	putRaw(t, ctx, kv, "09", `{"worker_id":9,"model":"m","kv_block_size":16,"hint_endpoints":["tcp://h:1"]}`)
	putRaw(t, ctx, kv, "10", `{"worker_id":10,`)
	mustPut(t, ctx, kv, rec(11, "m"))

	got := &reasons{n: map[string]int{}}
	r, err := Open(ctx, js, WithOnInvalid(got.add), WithEndpointRules(schemas.EndpointRules{MaxDPRanks: 512}))
	if err != nil {
		t.Fatal(err)
	}
	natstest.Run(t, r.Run)
	<-r.Ready()
	want := map[string]int{
		schemas.ReasonInproc: 1, schemas.ReasonBadPort: 1, schemas.ReasonWildcardHost: 2,
		schemas.ReasonEndpointTooLong: 1, schemas.ReasonTooManyEndpoints: 1, schemas.ReasonIPCNotAllowed: 1,
		ReasonIDMismatch: 1, ReasonBadKey: 1, ReasonMalformed: 1,
	}
	if s := got.snapshot(); !maps.Equal(s, want) {
		t.Fatalf("refusals by reason %v, want %v", s, want)
	}
	if r.Invalid() != 10 {
		t.Fatalf("Invalid() = %d, want 10", r.Invalid())
	}
	if ws := r.Workers(); len(ws) != 1 || ws[0].WorkerID != 11 {
		t.Fatalf("workers %+v, want only 11", ws)
	}
}

func TestRegistryAllowsIPCWhenAsked(t *testing.T) {
	ctx, js, kv := setup(t)
	ipc := rec(4, "m")
	ipc.HintEndpoints = []string{"ipc:///run/sched.sock"}
	mustPut(t, ctx, kv, ipc) // Put leaves ipc:// to the readers' rules
	got := &reasons{n: map[string]int{}}
	r, err := Open(ctx, js, WithOnInvalid(got.add), WithEndpointRules(schemas.EndpointRules{AllowIPC: true}))
	if err != nil {
		t.Fatal(err)
	}
	natstest.Run(t, r.Run)
	<-r.Ready()
	if _, ok := r.Get(4); !ok || len(got.snapshot()) != 0 {
		t.Fatalf("ipc record with AllowIPC: present %v, refusals %v", ok, got.snapshot())
	}
	// Put still refuses what no reader takes.
	in := rec(5, "m")
	in.HintEndpoints = []string{"inproc://x"}
	if err := Put(ctx, kv, in); err == nil {
		t.Fatal("Put accepted an inproc:// endpoint")
	}
}

// Two workers may not list one endpoint: the second is refused with
// endpoint_claimed until the first leaves, and then taken. A record
// whose layout would make every pin huge (20,000 suffixes at page_size
// 1, the record that once crashed every member) is refused by reason.
func TestRegistryRefusesClaimedEndpointsAndHugeLayouts(t *testing.T) {
	ctx, js, kv := setup(t)
	got := &reasons{n: map[string]int{}}
	r, err := Open(ctx, js, WithOnInvalid(got.add))
	if err != nil {
		t.Fatal(err)
	}
	natstest.Run(t, r.Run)
	<-r.Ready()
	one := rec(1, "m")
	mustPut(t, ctx, kv, one)
	thief := rec(2, "m")
	thief.HintEndpoints = one.HintEndpoints
	putRaw(t, ctx, kv, "2", mustJSON(t, thief))
	suffixes := make([]string, 20000)
	for i := range suffixes {
		suffixes[i] = fmt.Sprintf("_%d", i)
	}
	huge := rec(3, "m")
	huge.ObjectLayout = &schemas.ObjectLayout{PageSize: 1, HicacheObjectLayout: schemas.HicacheObjectLayout{
		KeyPrefix: "p", Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: suffixes}}}}
	putRaw(t, ctx, kv, "3", mustJSON(t, huge))
	longKey := rec(4, "m")
	longKey.ObjectLayout = &schemas.ObjectLayout{PageSize: 64, HicacheObjectLayout: schemas.HicacheObjectLayout{
		KeyPrefix: strings.Repeat("k", 600), Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: []string{"_k"}}}}}
	putRaw(t, ctx, kv, "4", mustJSON(t, longKey))
	want := map[string]int{ReasonEndpointClaimed: 1, schemas.ReasonLayoutSuffixes: 1, schemas.ReasonLayoutKeyLen: 1}
	natstest.Eventually(t, within, func() bool { return maps.Equal(got.snapshot(), want) }, "refusals %v, want %v", got.snapshot(), want)
	if ws := r.Workers(); len(ws) != 1 || ws[0].WorkerID != 1 {
		t.Fatalf("workers %+v, want only 1", ws)
	}
	if err := kv.Delete(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, within, func() bool { _, ok := r.Get(1); return !ok }, "worker 1 left")
	putRaw(t, ctx, kv, "2", mustJSON(t, thief)) // a refresh, now that the endpoint is free
	natstest.Eventually(t, within, func() bool { _, ok := r.Get(2); return ok }, "worker 2 takes the freed endpoint")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
