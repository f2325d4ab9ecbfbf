package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/streams"
)

// TestRegisterRestartKeepsOverlap: a graceful restart of `hintstream
// register` deletes the worker's record and writes it again; the
// engine's cache is intact, and so must the index be. Before
// --worker-grace, the overlap went from 8 to 0.
func TestRegisterRestartKeepsOverlap(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	sink := newFaultSink(t, 0)
	run := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--http-addr", "127.0.0.1:0")
	addr := httpAddr(t, run)
	run.waitLine(t, 30*time.Second, "hintstream running")
	regArgs := []string{"register", "--nats-url", srv.ClientURL(), "--worker-id", "5", "--model", model,
		"--kv-block-size", "16", "--hint-endpoint", sink.ep, "--interval", "1s", "--log-format", "json"}
	reg := start(t, regArgs...)
	run.waitLine(t, 30*time.Second, `"msg":"worker joined"`)
	prompt := seq(9000, 8*16)
	publishStored(t, ctx, js, 5, prompt)
	tokens := make([]string, len(prompt))
	for i, v := range prompt {
		tokens[i] = strconv.FormatUint(uint64(v), 10)
	}
	overlap := func() int {
		out, errs, ok := inspect(t, "--addr", addr, "overlap", "--model", model, "--tokens", strings.Join(tokens, ","), "--json")
		if !ok {
			return -1
		}
		var ov observe.OverlapView
		if err := json.Unmarshal([]byte(out), &ov); err != nil {
			t.Logf("overlap: %s %s", out, errs)
			return -1
		}
		for _, c := range ov.Candidates {
			if c.WorkerID == 5 {
				return c.OverlapBlocks
			}
		}
		return 0
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return overlap() == 8 }, "overlap 8 before the restart")
	// A graceful stop deletes the record.
	reg.stop(t)
	run.waitLine(t, 10*time.Second, `"msg":"worker left"`)
	start(t, regArgs...)
	run.waitLine(t, 20*time.Second, "worker registered again within its grace period")
	if got := overlap(); got != 8 {
		t.Fatalf("overlap %d after the sidecar's restart, want 8", got)
	}
}
