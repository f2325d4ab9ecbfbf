package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

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
	defer r.Stop()
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
	defer r.Stop()
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
