package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/standin"
)

// TestAdapterTargets: the whole path with the shipped binaries for each
// prefetch target that is not the engine: a wake-up on the bus, `run`
// picks registered worker 9, whose hint endpoint is `hintstream adapter
// --prefetch-target T`, which makes the call T offers: a one-token
// /v1/completions on the Dynamo frontend stand-in routed to instance 9,
// rank 0, or an /l2/prefetch of the prompt on the LMCache stand-in.
func TestAdapterTargets(t *testing.T) {
	for _, target := range []string{"dynamo", "lmcache"} {
		t.Run(target, func(t *testing.T) {
			front := standin.NewDynamo([]string{model}, map[uint64]uint32{9: 1})
			t.Cleanup(front.Close)
			lm := standin.NewLMCache(model, 1)
			lm.ChunkSize = 16
			t.Cleanup(lm.Close)
			srv := natstest.Start(t)
			_, js := natstest.Connect(t, srv)
			ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
			defer cancel()
			ep := fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
			ad := start(t, "adapter", "--bind", ep, "--prefetch-target", target, "--frontend-url", front.URL,
				"--lmcache-url", lm.URL, "--log-level", "debug")
			ad.waitLine(t, 10*time.Second, "adapter listening")
			run := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json")
			run.waitLine(t, 30*time.Second, "hintstream running")
			start(t, "register", "--nats-url", srv.ClientURL(), "--worker-id", "9", "--model", model,
				"--kv-block-size", "16", "--hint-endpoint", ep, "--interval", "1s")
			run.waitLine(t, 30*time.Second, `"msg":"worker joined"`)

			prompt := seq(3, 64)
			publishRequest(t, ctx, js, wake("tg-"+target, "s-"+target, prompt))
			if target == "dynamo" {
				natstest.Eventually(t, 15*time.Second, func() bool { return len(front.Accepted()) == 1 }, "the frontend warm-up")
				c := front.Accepted()[0]
				ids, _ := c.Body["prompt"].([]any)
				if c.WorkerID != 9 || c.DpRank == nil || *c.DpRank != 0 || c.Body["max_tokens"] != json.Number("1") ||
					len(ids) != len(prompt) || ids[63] != json.Number(fmt.Sprint(prompt[63])) {
					t.Fatalf("frontend call to worker %d rank %v, body %v", c.WorkerID, c.DpRank, c.Body)
				}
				if n := len(front.Rejected()); n != 0 {
					t.Fatalf("the frontend refused %d calls", n)
				}
				return
			}
			natstest.Eventually(t, 15*time.Second, func() bool { return len(lm.Accepted()) == 1 }, "the LMCache prefetch")
			p := lm.Accepted()[0]
			if p.ModelName != model || p.WorldSize != 1 || len(p.TokenIDs) != len(prompt) || p.Chunks != 4 ||
				p.TokenIDs[63] != int64(prompt[63]) || p.CacheSalt != "" {
				t.Fatalf("LMCache read %+v", p)
			}
		})
	}
}
