package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// inspect runs `hintstream inspect args...` and returns its stdout, its
// stderr and whether it exited 0.
func inspect(t *testing.T, args ...string) (string, string, bool) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"inspect"}, args...)...)
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return out.String(), errs.String(), err == nil
}

// httpAddr reads the address picked for --http-addr 127.0.0.1:0 from the
// JSON log.
func httpAddr(t *testing.T, p *proc) string {
	t.Helper()
	line := p.waitLine(t, 30*time.Second, "serving /metrics, /healthz, /readyz")
	var rec struct {
		Addr string `json:"addr"`
	}
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Addr == "" {
		t.Fatalf("no addr in %q: %v", line, err)
	}
	return rec.Addr
}

// TestInspect: two registered workers with KV events and a load report,
// asked about through `hintstream inspect` against a running instance.
// Prompt of 99 tokens (6 full blocks of 16); worker 1 caches 2 blocks,
// worker 2 caches 5 and has 16 prefill tokens in flight:
//
//	w1: (99-32)/16      + 6 = 10.1875
//	w2: (99-80+16)/16   + 6 =  8.1875  ← chosen
func TestInspect(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 2; id++ {
		rec := schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16,
			HintEndpoints: []string{fmt.Sprintf("tcp://127.0.0.1:%d5999", id)}}
		if err := registry.Put(ctx, kv, rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	prompt := seq(7000, 6*16+3)
	publishStored(t, ctx, js, 1, prompt[:2*16])
	publishStored(t, ctx, js, 2, prompt[:5*16])
	busy := uint64(16)
	publishJSON(t, ctx, js, streams.LoadSubject(2), schemas.ActiveLoad{WorkerID: 2, ActivePrefillTokens: &busy})

	p := start(t, "run", "--nats-url", srv.ClientURL(), "--http-addr", "127.0.0.1:0", "--log-format", "json")
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")

	tokens := make([]string, len(prompt))
	for i, v := range prompt {
		tokens[i] = strconv.FormatUint(uint64(v), 10)
	}
	out, errs, ok := inspect(t, "--addr", addr, "overlap", "--model", model, "--tokens", strings.Join(tokens, ","), "--json")
	if !ok {
		t.Fatalf("inspect overlap failed: %s", errs)
	}
	var ov observe.OverlapView
	if err := json.Unmarshal([]byte(out), &ov); err != nil {
		t.Fatalf("inspect overlap --json: %v in %s", err, out)
	}
	if ov.Chosen == nil || ov.Chosen.WorkerID != 2 || ov.Tokens != len(prompt) || len(ov.Candidates) != 2 {
		t.Fatalf("overlap = %s, want worker 2 chosen among 2 for %d tokens", out, len(prompt))
	}
	for _, c := range ov.Candidates {
		want := map[uint64]struct {
			overlap int
			logit   float64
		}{1: {2, 10.1875}, 2: {5, 8.1875}}[c.WorkerID]
		if c.OverlapBlocks != want.overlap || c.Logit != want.logit || c.Chosen != (c.WorkerID == 2) {
			t.Fatalf("candidate %+v, want overlap %d, logit %g", c, want.overlap, want.logit)
		}
	}

	// The same prompt, as a file and as a table.
	file := t.TempDir() + "/prompt.json"
	data, err := json.Marshal(prompt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, ok = inspect(t, "overlap", "--addr", addr, "--model", model, "--tokens-file", file)
	if !ok || !strings.Contains(out, "chosen worker 2 dp rank 0") ||
		!regexp.MustCompile(`(?m)^\*\s+2\s+0\s+16\s+5\s+0/0/0\s+7\.1875\s+5\s+6\s+0\s+8\.1875\s`).MatchString(out) {
		t.Fatalf("inspect overlap table:\n%s%s", out, errs)
	}
	t.Logf("inspect overlap:\n%s", out)

	out, errs, ok = inspect(t, "--addr", addr, "workers")
	if !ok || !regexp.MustCompile(`(?m)^2\s+Qwen/Qwen3-8B\s+16\s+0\s+tcp://127\.0\.0\.1:25999\s+16\s+-\s+-\s+no\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^1\s+Qwen/Qwen3-8B\s+16\s+0\s+tcp://\S+\s+-\s+-\s+-\s+no\s`).MatchString(out) {
		t.Fatalf("inspect workers:\n%s%s", out, errs)
	}
	t.Logf("inspect workers:\n%s", out)
	out, errs, ok = inspect(t, "--addr", addr, "index")
	if !ok || !regexp.MustCompile(`(?m)^device blocks\s+7$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^stale workers\s+0$`).MatchString(out) {
		t.Fatalf("inspect index:\n%s%s", out, errs)
	}
	t.Logf("inspect index:\n%s", out)
	out, errs, ok = inspect(t, "--addr", addr, "index", "--json")
	var ix observe.IndexView
	if !ok || json.Unmarshal([]byte(out), &ix) != nil || ix.Workers != 2 || ix.DeviceBlocks != 7 {
		t.Fatalf("inspect index --json: %s%s", out, errs)
	}

	// Pins are off: tool times are a clear error.
	if _, errs, ok = inspect(t, "--addr", addr, "tooltime"); ok || !strings.Contains(errs, "pins are off") {
		t.Fatalf("inspect tooltime with pins off: ok=%v, stderr %q", ok, errs)
	}
	p.stop(t)
	// And an instance that is gone is said to be unreachable.
	if _, errs, ok = inspect(t, "--addr", addr, "workers"); ok || !strings.Contains(errs, "cannot reach hintstream") {
		t.Fatalf("inspect a stopped instance: ok=%v, stderr %q", ok, errs)
	}
}
