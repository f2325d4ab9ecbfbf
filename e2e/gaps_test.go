package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/hintstream/hintstream/internal/longtest"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// Issue 26, "gaps are loud": the tests below drive the real binary
// against a real nats-server. Each failed before the change it names.

// publishChain announces worker's full blocks of tokens one KV event per
// block (each the child of the one before), event ids from firstID: n
// blocks are n stream messages.
func publishChain(t *testing.T, ctx context.Context, js jetstream.JetStream, worker uint64, tokens []uint32, firstID uint64) {
	t.Helper()
	local := kvevents.LocalBlockHashes(tokens, 16)
	for i, h := range local {
		st := &schemas.KvCacheStoreData{Blocks: []schemas.StoredBlock{{
			BlockHash: schemas.BlockHash(worker<<40 | uint64(tokens[0])<<8 | uint64(i+1)), TokensHash: schemas.BlockHash(h)}}}
		if i > 0 {
			p := schemas.BlockHash(worker<<40 | uint64(tokens[0])<<8 | uint64(i))
			st.ParentHash = &p
		}
		b, err := json.Marshal(schemas.RouterEvent{WorkerID: worker, Event: schemas.KvCacheEvent{EventID: firstID + uint64(i),
			Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: st}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishAsync(streams.KVEventSubject(worker), b); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("KV events not acknowledged")
	}
}

// registerWorkers puts a record per id (model, block size 16, an
// endpoint nobody binds: these tests ask for choices, not hints).
func registerWorkers(t *testing.T, ctx context.Context, js jetstream.JetStream, ids ...uint64) {
	t.Helper()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16,
			HintEndpoints: []string{fmt.Sprintf("tcp://127.0.0.1:%d", 29000+id)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// overlapOf asks a member which worker it would choose for prompt, and
// how many blocks each candidate holds.
func overlapOf(t *testing.T, addr string, prompt []uint32) (chosen uint64, overlap map[uint64]int) {
	t.Helper()
	body, err := json.Marshal(observe.OverlapRequest{Model: model, TokenIDs: prompt})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+addr+"/v1/overlap", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v observe.OverlapView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("overlap: %v", err)
	}
	overlap = map[uint64]int{}
	for _, c := range v.Candidates {
		overlap[c.WorkerID] = c.OverlapBlocks
	}
	if v.Chosen != nil {
		chosen = v.Chosen.WorkerID
	}
	return chosen, overlap
}

func readyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func streamState(t *testing.T, ctx context.Context, js jetstream.JetStream) *jetstream.StreamInfo {
	t.Helper()
	st, err := js.Stream(ctx, streams.DefaultSet().KVEvents.Name)
	if err != nil {
		t.Fatal(err)
	}
	return st.CachedInfo()
}

// TestGapsPurgedBehindSnapshots is finding 1, first case. A member purges
// 100 KV events behind its snapshot. Then:
//   - a member with snapshots off resumes behind the stream's first
//     sequence: it must say so in the log (naming 1..100), on /metrics
//     (hintstream_index_complete 0), on /readyz and in `inspect index`;
//   - a member with a snapshot bucket of its own must fall back to the
//     group's newer snapshot and hold all 100 blocks, complete.
//
// Before the change, the first logged nothing above INFO and the second
// came up with 0 blocks, both with /readyz "ready".
func TestGapsPurgedBehindSnapshots(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(3*time.Minute))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	registerWorkers(t, ctx, js, 1, 2)
	prompt := seq(100, 100*16)
	publishChain(t, ctx, js, 1, prompt, 1)

	a := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--snapshot-interval", "500ms",
		"--kv-events-keep", "1ms")
	a.waitLine(t, 60*time.Second, "KV events behind the snapshots purged")
	a.stop(t)
	if st := streamState(t, ctx, js); st.State.FirstSeq != 101 {
		t.Fatalf("KV_EVENTS first sequence %d after the purge, want 101", st.State.FirstSeq)
	}

	// Snapshots off: the index lacks 100 events and says so.
	b := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--snapshot-interval", "0",
		"--http-addr", "127.0.0.1:0")
	addr := httpAddr(t, b)
	b.waitLine(t, 30*time.Second, "hintstream running")
	line := b.waitLine(t, time.Second, "index incomplete")
	var rec struct {
		Level   string `json:"level"`
		FromSeq uint64 `json:"from_seq"`
		ToSeq   uint64 `json:"to_seq"`
		Missing uint64 `json:"missing"`
	}
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level != "WARN" || rec.FromSeq != 1 || rec.ToSeq != 100 || rec.Missing != 100 {
		t.Fatalf("gap line %q (%v): want WARN from_seq 1 to_seq 100 missing 100", line, err)
	}
	if v := scrape(t, addr)["hintstream_index_complete"]; v != 0 {
		t.Fatalf("hintstream_index_complete %v with 100 events missing, want 0", v)
	}
	if code, body := readyz(t, addr); code != http.StatusOK || !strings.Contains(body, "index incomplete: KV events 1..100") {
		t.Fatalf("/readyz %d %q: want 200 carrying the missing range", code, body)
	}
	out, errs, ok := inspect(t, "--addr", addr, "index")
	if !ok || !regexp.MustCompile(`(?m)^complete\s+no: KV events 1\.\.100 `).MatchString(out) {
		t.Fatalf("inspect index:\n%s%s", out, errs)
	}
	if _, ov := overlapOf(t, addr, prompt); ov[1] != 0 {
		t.Fatalf("worker 1 overlap %d: the member was expected to lack the purged blocks", ov[1])
	}
	b.stop(t)

	// A bucket of its own: the group's snapshot fills the index.
	c := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--snapshot-interval", "1h",
		"--snapshot-bucket", "mine", "--http-addr", "127.0.0.1:0")
	addr = httpAddr(t, c)
	c.waitLine(t, 30*time.Second, "hintstream running")
	loaded := c.waitLine(t, time.Second, "index snapshot loaded")
	if !strings.Contains(loaded, `"bucket":"hintstream_snapshots"`) {
		t.Fatalf("loaded %q: want the group's bucket", loaded)
	}
	if chosen, ov := overlapOf(t, addr, prompt); ov[1] != 100 || chosen != 1 {
		t.Fatalf("chosen %d, overlap %v: want worker 1 with all 100 blocks", chosen, ov)
	}
	if v := scrape(t, addr)["hintstream_index_complete"]; v != 1 {
		t.Fatalf("hintstream_index_complete %v after the fallback, want 1", v)
	}
	if code, body := readyz(t, addr); code != http.StatusOK || strings.TrimSpace(body) != "ready" {
		t.Fatalf("/readyz %d %q", code, body)
	}
	c.stop(t)
	figure(t, "gaps_purged", "missing_logged", rec.Missing, "fallback_blocks", 100)
}

// snapshotMeta reads the default snapshot's covered sequence and the
// stream incarnation it names (zero when absent).
func snapshotMeta(t *testing.T, ctx context.Context, js jetstream.JetStream) (seq uint64, created time.Time, ok bool) {
	t.Helper()
	obs, err := js.ObjectStore(ctx, "hintstream_snapshots")
	if err != nil {
		return 0, time.Time{}, false
	}
	info, err := obs.GetInfo(ctx, "kv-index/"+streams.DefaultSet().KVEvents.Name)
	if err != nil {
		return 0, time.Time{}, false
	}
	seq, _ = strconv.ParseUint(info.Headers.Get("Hintstream-Kv-Seq"), 10, 64)
	created, _ = time.Parse(time.RFC3339Nano, info.Headers.Get("Hintstream-Kv-Stream-Created"))
	return seq, created, true
}

// recreateKVStream deletes KV_EVENTS and, unless a member does it first,
// creates it again; it returns once the new stream exists.
func recreateKVStream(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	name := streams.DefaultSet().KVEvents.Name
	old := streamState(t, ctx, js).Created
	if err := js.DeleteStream(ctx, name); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := streams.EnsureSet(ctx, js, streams.DefaultSet())
		if err == nil {
			if st, err := js.Stream(ctx, name); err == nil && !st.CachedInfo().Created.Equal(old) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("KV_EVENTS not recreated: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestGapsRecreatedStream is finding 1, second case. KV_EVENTS is deleted
// and created again:
//   - a member restarted on the new stream must not load the old
//     stream's snapshot (which covers sequence 100 and would make it skip
//     the new stream's 50 events): it replays them and chooses worker 2
//     for worker 2's prompt;
//   - a live member must not purge the new stream behind the old
//     snapshot: at every look, whatever was purged is covered by a saved
//     snapshot of the new stream, and one such snapshot is saved.
//
// Before the change the restarted member applied 0 of the 50 events and
// chose worker 1, and the live member purged the new events no snapshot
// held.
func TestGapsRecreatedStream(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(3*time.Minute))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	registerWorkers(t, ctx, js, 1, 2)
	args := []string{"run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--snapshot-interval", "300ms",
		"--kv-events-keep", "1ms", "--http-addr", "127.0.0.1:0"}
	// Worker 1 holds a short prefix of worker 2's prompt: with worker 2's
	// events missing, worker 1 is chosen.
	prompt2 := seq(5000, 50*16)
	publishChain(t, ctx, js, 1, prompt2[:2*16], 1)
	publishChain(t, ctx, js, 1, seq(100, 98*16), 10)
	a := start(t, args...)
	a.waitLine(t, 60*time.Second, "KV events behind the snapshots purged")
	a.stop(t)
	if s, _, ok := snapshotMeta(t, ctx, js); !ok || s != 100 {
		t.Fatalf("old snapshot covers %d (found %v), want 100", s, ok)
	}

	recreateKVStream(t, ctx, js)
	publishChain(t, ctx, js, 2, prompt2, 1)

	b := start(t, args...)
	addr := httpAddr(t, b)
	b.waitLine(t, 30*time.Second, "hintstream running")
	chosen, ov := overlapOf(t, addr, prompt2)
	if chosen != 2 || ov[2] != 50 {
		t.Fatalf("restarted member: chosen %d, overlap %v; want worker 2 with its 50 blocks", chosen, ov)
	}
	b.waitLine(t, time.Second, "snapshot belongs to an older stream")

	// b is live: the stream goes again, 30 events follow on the new one.
	b.waitLine(t, 30*time.Second, "index snapshot saved")
	recreateKVStream(t, ctx, js)
	prompt1 := seq(9000, 30*16)
	publishChain(t, ctx, js, 1, prompt1, 200)
	for {
		st := streamState(t, ctx, js)
		s, created, ok := snapshotMeta(t, ctx, js)
		current := ok && created.Equal(st.Created)
		if st.State.FirstSeq > 1 && (!current || s < st.State.FirstSeq-1) {
			t.Fatalf("new stream purged up to %d; snapshot covers %d of stream created %v (current %v)",
				st.State.FirstSeq-1, s, created, st.Created)
		}
		if current && s >= 30 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no snapshot of the new stream saved: covers %d, created %v, stream created %v", s, created, st.Created)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if chosen, ov := overlapOf(t, addr, prompt1); chosen != 1 || ov[1] != 30 {
		t.Fatalf("live member after the second recreation: chosen %d, overlap %v", chosen, ov)
	}
	b.stop(t)
	figure(t, "gaps_recreated", "applied_after_restart", ov[2])
}

// TestGapsEventPlanePublishers is finding 8 against the binary, with
// frames from the independent Python builder published on core NATS as
// Dynamo's event plane does:
//   - worker 7's one publisher carries dp ranks 0 and 1, its sequences
//     alternating between them: no gap may be claimed (before: 8 gaps, both
//     pairs stale, so --exclude-stale dropped the worker);
//   - worker 8 hears from two publisher ids in turn, and one of them
//     skips a sequence: a gap (before: hidden by the switch).
func TestGapsEventPlanePublishers(t *testing.T) {
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	const ns, comp = "dyn-gaps", "worker"
	dyn := []string{"--dynamo-namespace", ns, "--dynamo-component", comp}
	if out, errOut, code := streamsRun(t, srv.ClientURL(), append([]string{"create"}, dyn...)...); code != 0 {
		t.Fatalf("streams create: exit %d\n%s%s", code, out, errOut)
	}
	kvb, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []schemas.WorkerRecord{
		{WorkerID: 7, Model: model, KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:29107", "tcp://127.0.0.1:29207"}},
		{WorkerID: 8, Model: model, KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:29108"}},
	} {
		if err := registry.Put(ctx, kvb, rec); err != nil {
			t.Fatal(err)
		}
	}
	p := start(t, append([]string{"run", "--nats-url", srv.ClientURL(), "--log-format", "json",
		"--http-addr", "127.0.0.1:0"}, dyn...)...)
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")

	eventID := map[uint64]int{}
	frame := func(w uint64, dp int, pub uint64, sequence int, base uint32) map[string]any {
		eventID[w]++
		return map[string]any{"kind": "kv", "namespace": ns, "component": comp, "worker": w, "dp": dp,
			"event_id": eventID[w], "tier": "device", "tokens": seq(base, 16), "block_size": 16,
			"publisher": pub, "sequence": sequence}
	}
	publish := func(specs []map[string]any) {
		t.Helper()
		for _, f := range dynFrames(t, specs) {
			data, err := hex.DecodeString(f.Hex)
			if err != nil {
				t.Fatal(err)
			}
			if err := nc.Publish(f.Subject, data); err != nil {
				t.Fatal(err)
			}
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	applied := func() float64 { return series(scrape(t, addr), "hintstream_kv_events_applied_total", "kind", "stored") }

	// Worker 7: sequences 0..15 alternate between dp ranks 0 and 1.
	var specs []map[string]any
	for s := 0; s < 16; s++ {
		specs = append(specs, frame(7, s%2, 1<<40+7, s, uint32(1000+100*s)))
	}
	publish(specs)
	natstest.Eventually(t, 20*time.Second, func() bool { return applied() == 16 }, "16 frames of worker 7 applied")
	m := scrape(t, addr)
	if g, st := series(m, "hintstream_index_gaps_total"), series(m, "hintstream_index_stale_workers"); g != 0 || st != 0 {
		t.Fatalf("one publisher on dp ranks 0 and 1: %v gaps, %v stale pairs; want none", g, st)
	}

	// Worker 8: publishers A and B in turn, in order; then A skips one.
	const pubA, pubB = 1<<41 + 8, 1<<42 + 8
	specs = nil
	for s := 0; s < 5; s++ {
		specs = append(specs, frame(8, 0, pubA, s, uint32(50000+100*s)), frame(8, 0, pubB, s, uint32(60000+100*s)))
	}
	publish(specs)
	natstest.Eventually(t, 20*time.Second, func() bool { return applied() == 26 }, "10 frames of worker 8 applied")
	if g := series(scrape(t, addr), "hintstream_index_gaps_total"); g != 0 {
		t.Fatalf("alternating publishers in order: %v gaps, want 0", g)
	}
	publish([]map[string]any{frame(8, 0, pubA, 6, 70000), frame(8, 0, pubB, 5, 70100)}) // A's 5 is lost
	natstest.Eventually(t, 20*time.Second, func() bool { return applied() == 28 }, "2 more frames of worker 8 applied")
	m = scrape(t, addr)
	if g, st := series(m, "hintstream_index_gaps_total"), series(m, "hintstream_index_stale_workers"); g != 1 || st != 1 {
		t.Fatalf("publisher A skipped a sequence: %v gaps, %v stale pairs; want 1 and 1 (worker 8)", g, st)
	}
	p.stop(t)
}

// TestGapsTablesAdmitRegisteredRanks is finding 3 against the binary:
//   - registered worker 1, with one hint endpoint, publishes KV events on
//     dp ranks 0..65535; worker 2 registers once they are applied and
//     publishes its own. Before the change the flood filled the index's
//     65,536 pairs and worker 2's prompt showed overlap 0;
//   - 65,546 load reports for the unregistered kv.load.999 filled the
//     load table, worker 1's report of 50,000 decode blocks was refused,
//     and worker 1 was chosen over the idle worker 2.
func TestGapsTablesAdmitRegisteredRanks(t *testing.T) {
	longtest.Require(t, "floods 65,536 ranks of loads and KV events")
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(4*time.Minute))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	registerWorkers(t, ctx, js, 1)
	const ranks, loadFlood = 65536, 65546
	window := func(i int) { // bounds the acks outstanding
		if i%2000 != 1999 {
			return
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			t.Fatal("floods not acknowledged")
		}
	}
	flood := seq(3, 16)
	local := kvevents.LocalBlockHashes(flood, 16)
	for r := 0; r < ranks; r++ {
		b, err := json.Marshal(schemas.RouterEvent{WorkerID: 1, Event: schemas.KvCacheEvent{EventID: 1, DpRank: uint32(r),
			Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{
				Blocks: []schemas.StoredBlock{{BlockHash: 1, TokensHash: schemas.BlockHash(local[0])}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishAsync(streams.KVEventSubject(1), b); err != nil {
			t.Fatal(err)
		}
		window(r)
	}
	one := uint64(1)
	for r := 0; r < loadFlood; r++ {
		b, err := json.Marshal(schemas.ActiveLoad{WorkerID: 999, DpRank: uint32(r % ranks), ActiveDecodeBlocks: &one})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishAsync(streams.LoadSubject(999), b); err != nil {
			t.Fatal(err)
		}
		window(r)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("floods not acknowledged")
	}
	// Worker 1 holds one block of prompt3 but is busy; worker 2 is idle.
	prompt3 := seq(80000, 4*16)
	publishChain(t, ctx, js, 1, prompt3[:16], 2)
	busy := uint64(50_000)
	publishJSON(t, ctx, js, streams.LoadSubject(1), schemas.ActiveLoad{WorkerID: 1, ActiveDecodeBlocks: &busy})

	p := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--http-addr", "127.0.0.1:0")
	addr := httpAddr(t, p)
	p.waitLine(t, 2*time.Minute, "hintstream running") // the floods are applied
	registerWorkers(t, ctx, js, 2)
	prompt2 := seq(40000, 4*16)
	publishChain(t, ctx, js, 2, prompt2, 1)
	deadline := time.Now().Add(natstest.Within(20 * time.Second))
	for {
		chosen, ov := overlapOf(t, addr, prompt2)
		if chosen == 2 && ov[2] == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the dp-rank flood: chosen %d, overlap %v; want worker 2 with 4 blocks", chosen, ov)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if chosen, ov := overlapOf(t, addr, prompt3); chosen != 2 || ov[1] != 1 {
		t.Fatalf("after the load flood: chosen %d, overlap %v; want the idle worker 2 over busy worker 1", chosen, ov)
	}
	m := scrape(t, addr)
	if got := series(m, "hintstream_index_workers"); got != 2 {
		t.Fatalf("index holds %v (worker, dp rank) pairs, want 2", got)
	}
	if got := series(m, "hintstream_kv_events_dropped_total", "reason", "dp rank out of range"); got != ranks-1 {
		t.Fatalf("KV events refused for their rank: %v, want %d", got, ranks-1)
	}
	if got := series(m, "hintstream_load_refused_total", "reason", "unknown worker"); got != loadFlood {
		t.Fatalf("load reports refused: %v, want %d", got, loadFlood)
	}
	p.stop(t)
	figure(t, "tables_admit", "kv_refused", ranks-1, "load_refused", loadFlood)
}

// TestGapsExpiredTriggersCounted is finding 7: 20 wake-ups and 20
// tool-call responses age out of their streams while no member runs. The
// member that starts next finds its durables' ack floors behind the
// streams' first sequences and counts and logs each range (before: no
// counter, no log).
func TestGapsExpiredTriggersCounted(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(2*time.Minute))
	defer cancel()
	set := streams.DefaultSet()
	set.Requests.MaxAge, set.Requests.Duplicates = time.Second, time.Second
	set.Responses.MaxAge, set.Responses.Duplicates = time.Second, time.Second
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	sink := workerSink(t, ctx, js, 1)
	pin := newFaultSink(t, 0)
	args := []string{"run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--http-addr", "127.0.0.1:0",
		"--pin-endpoint", pin.ep}
	p := start(t, args...)
	p.waitLine(t, 30*time.Second, "hintstream running")
	publishRequest(t, ctx, js, wake("w-0", "s-0", seq(1, 32)))
	natstest.Eventually(t, 10*time.Second, func() bool { return sink.has("w-0") }, "the first wake-up hinted")
	p.stop(t)

	for i := 1; i <= 20; i++ {
		publishRequest(t, ctx, js, wake(fmt.Sprintf("w-%d", i), fmt.Sprintf("s-%d", i), seq(uint32(i*100), 32)))
		publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: fmt.Sprintf("w-%d", i), SessionID: fmt.Sprintf("s-%d", i),
			Model: model, WorkerID: 1, FinishReason: "tool_calls"})
	}
	natstest.Eventually(t, 30*time.Second, func() bool {
		for _, name := range []string{set.Requests.Name, set.Responses.Name} {
			st, err := js.Stream(ctx, name)
			if err != nil || st.CachedInfo().State.Msgs != 0 {
				return false
			}
		}
		return true
	}, "the 40 events aged out")

	p = start(t, args...)
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")
	for _, c := range []struct {
		durable string
		from    uint64
		metric  string
	}{{"hintstream-requests", 2, "hintstream_requests_expired_unread_total"}, {"hintstream-responses", 1, "hintstream_responses_expired_unread_total"}} {
		var rec struct {
			Level   string `json:"level"`
			Durable string `json:"durable"`
			FromSeq uint64 `json:"from_seq"`
			ToSeq   uint64 `json:"to_seq"`
			Missing uint64 `json:"missing"`
		}
		found := false
		for _, l := range p.lines(&p.errs) {
			if strings.Contains(l, "expired from the stream before any member handled them") && strings.Contains(l, c.durable) {
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatal(err)
				}
				found = true
			}
		}
		if !found || rec.Level != "WARN" || rec.FromSeq != c.from || rec.Missing != 20 || rec.ToSeq != c.from+19 {
			t.Fatalf("%s: line %+v (found %v), want WARN from_seq %d missing 20", c.durable, rec, found, c.from)
		}
		if v := scrape(t, addr)[c.metric]; v != 20 {
			t.Fatalf("%s = %v, want 20", c.metric, v)
		}
	}
	p.stop(t)
}

// TestGapsSeveralKVStreams is §8 of issue 26 (finding 11, third case):
// KV events partitioned into two streams, worker 1's in KV_A and worker
// 2's in KV_B, are read by one member (--kv-streams KV_B beside
// --kv-events-stream KV_A). The snapshot records each stream's sequence,
// so a restarted member replays only each stream's tail.
func TestGapsSeveralKVStreams(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(2*time.Minute))
	defer cancel()
	set := streams.DefaultSet()
	set.KVEvents.Name, set.KVEvents.Subjects = "KV_A", []string{streams.KVEventSubject(1)}
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_B", Subjects: []string{streams.KVEventSubject(2)}}); err != nil {
		t.Fatal(err)
	}
	registerWorkers(t, ctx, js, 1, 2)
	p1, p2 := seq(1000, 10*16), seq(2000, 20*16)
	publishChain(t, ctx, js, 1, p1, 1)
	publishChain(t, ctx, js, 2, p2, 1)
	args := []string{"run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--http-addr", "127.0.0.1:0",
		"--snapshot-interval", "300ms", "--kv-events-stream", "KV_A", "--kv-events-subjects", streams.KVEventSubject(1),
		"--kv-streams", "KV_B"}
	p := start(t, args...)
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")
	for prompt, want := range map[uint64][]uint32{1: p1, 2: p2} {
		if chosen, ov := overlapOf(t, addr, want); chosen != prompt || ov[prompt] != len(want)/16 {
			t.Fatalf("worker %d's prompt: chosen %d, overlap %v", prompt, chosen, ov)
		}
	}
	p.waitLine(t, 30*time.Second, "index snapshot saved")
	p.stop(t)
	obs, err := js.ObjectStore(ctx, "hintstream_snapshots")
	if err != nil {
		t.Fatal(err)
	}
	info, err := obs.GetInfo(ctx, "kv-index/KV_A")
	if err != nil {
		t.Fatal(err)
	}
	if h := info.Headers.Get("Hintstream-Kv-Extra-Streams"); !strings.HasPrefix(h, "KV_B=20@") || info.Headers.Get("Hintstream-Kv-Seq") != "10" {
		t.Fatalf("snapshot headers %v: want KV_A at 10 and KV_B at 20", info.Headers)
	}

	p3 := seq(3000, 5*16)
	publishChain(t, ctx, js, 2, p3, 100)
	p = start(t, args...)
	addr = httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")
	if got := scrape(t, addr)["hintstream_kv_events_received_total"]; got != 5 {
		t.Fatalf("restarted member received %v KV events, want the 5 of KV_B's tail", got)
	}
	for w, prompt := range map[uint64][]uint32{1: p1, 2: p3} {
		if chosen, ov := overlapOf(t, addr, prompt); chosen != w || ov[w] != len(prompt)/16 {
			t.Fatalf("after the restart, worker %d's prompt: chosen %d, overlap %v", w, chosen, ov)
		}
	}
	if v := scrape(t, addr)["hintstream_index_complete"]; v != 1 {
		t.Fatalf("hintstream_index_complete %v", v)
	}
	p.stop(t)
}
