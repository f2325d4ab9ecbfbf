package simulate

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/hintstream/hintstream/whatif/cluster"
)

// peerRun plays a Peer's own mechanism (peers.go) on the run's cluster:
// no decision engine, no wake-up prefetch, no affinity.
//
// Dynamo speculative prefill (Peer.SpeculativePrefill), from
// ai-dynamo/dynamo lib/llm/src/preprocessor/speculative_prefill.rs@141cf6d36ed99835c65cf5e2011cb64f55028b83
// (maybe_wrap_stream, prefill_task) and docs/agents/agent-hints.md@61ec97e33b0d4fee1574a9db102e9c5d57b1fb5f:
//
//   - when: on every turn whose request set nvext.agent_hints.speculative_prefill
//     (an opt-in per request, not a header; here every turn sets it, as a
//     harness that turns it on does), once the turn's stream shows a
//     finish_reason, whatever the reason (a tool call or not, the
//     conversation's last turn included: the frontend cannot know);
//   - what: the turn's messages plus the assistant's response, rendered
//     without a generation prompt (the next turn's prefix), tokenized, as
//     one request with max_tokens 1: here the turn's prompt tokens then its
//     output tokens;
//   - where: through the frontend's pipeline (next.generate), so the KV
//     router routes it like any request, and the worker prefills it: here
//     Route, then Serve at the response's time, which puts its blocks on
//     that device and writes them through to L3 as any prefill does. It
//     keeps the worker busy for its prefill (one output token);
//   - nothing else: no pin, no prefetch, no routing preference; a warm-up
//     that has not finished in 60 s is dropped (PREFILL_TASK_TIMEOUT),
//     which an instant simulated prefill never reaches.
//
// The warm-up's own prefill is real work, and it is what makes the next
// turn find the response's blocks: its cost (recomputed tokens + Alpha ×
// L3 tokens) is charged to the turn that triggered it (ModeResult
// WarmupCost, in Cost, and Mechanism.Warmup), else the peer would be
// credited with prefill it only moved.
//
// Tool-call TTL (Peer.ToolTTL, LearnedTTL), after Continuum (arXiv
// 2511.02230): a turn that ends in a tool call has its prompt's and
// response's pages pinned in L3 under the session's slot for the TTL; the
// session's next turn releases it once served (its cache is in use then,
// as Continuum unpins a program's cache when its next request runs). A
// learned TTL is per tool: the 90th percentile (nearest rank) of the tool
// times seen so far for that tool (the gap from a tool call's response to
// its session's next turn, all the peer sees), over the latest
// learnWindow of them; ToolTTL until one is seen. Continuum sets its TTL
// from the empirical distribution of past tool-call durations; its exact
// rule (a benefit − cost trade-off in the paper) was not read here, so
// the percentile is an assumption, and so is the 60 s fixed default.
type peerRun struct {
	p     *player
	peer  Peer
	times map[string]*toolTimes // learned tool times, per tool
	// pinned: sessions whose tool-call pin waits for their next turn.
	pinned map[string]bool
}

// learnWindow is how many of a tool's latest times the learned TTL
// weighs: enough for a stable 90th percentile, bounded for a long play.
const learnWindow = 4096

// learnQuantile is the share of a tool's times the learned TTL covers.
const learnQuantile = 0.9

func startPeer(p *player, pol Policy) (*peerRun, error) {
	cc := clusterConfig(p.cfg)
	cc.L3Eviction = pol.L3Eviction
	var err error
	if p.cl, err = cluster.NewCluster(cc); err != nil {
		return nil, err
	}
	return &peerRun{p: p, peer: *pol.Peer, times: map[string]*toolTimes{}, pinned: map[string]bool{}}, nil
}

func (r *peerRun) wakeup(context.Context, int) error { return nil }

func (r *peerRun) preferred(context.Context, int) (int, bool, error) { return 0, false, nil }

// request learns the tool time of the call the turn answers.
func (r *peerRun) request(_ context.Context, i int) error {
	req := r.p.w.Req(i)
	if !r.peer.LearnedTTL || req.Prev < 0 {
		return nil
	}
	prev := r.p.w.Req(req.Prev)
	if !prev.ToolCall || prev.Next != i {
		return nil
	}
	tt := r.times[prev.ToolNamed()]
	if tt == nil {
		tt = &toolTimes{}
		r.times[prev.ToolNamed()] = tt
	}
	tt.add(max(req.At-prev.ResponseAt, 0))
	return nil
}

func (r *peerRun) response(_ context.Context, i, _ int) error {
	req := r.p.w.Req(i)
	now := r.p.cl.Now()
	if req.Prev >= 0 && r.pinned[req.Session] {
		r.p.cl.L3.Release(peerSlot(req.Session), now)
		r.p.res.Releases++
		delete(r.pinned, req.Session)
	}
	if r.peer.SpeculativePrefill {
		if err := r.warmup(i); err != nil {
			return err
		}
	}
	if (r.peer.ToolTTL > 0 || r.peer.LearnedTTL) && req.ToolCall {
		keys, err := r.turnKeys(i)
		if err != nil {
			return err
		}
		if ttl := r.ttl(req.ToolNamed()); ttl > 0 && len(keys) > 0 {
			r.p.cl.L3.Pin(peerSlot(req.Session), keys, ttl, now)
			r.p.res.Pins++
			r.pinned[req.Session] = true
		}
	}
	return nil
}

func peerSlot(session string) string { return "ttl:" + session }

// ttl is the pin's TTL for a call of tool.
func (r *peerRun) ttl(tool string) time.Duration {
	if r.peer.LearnedTTL {
		if tt := r.times[tool]; tt != nil && len(tt.sorted) > 0 {
			return tt.quantile(learnQuantile)
		}
	}
	return r.peer.ToolTTL
}

// warmPrompt is request i's prompt then its output, hashed: the next
// turn's prefix, taken from the next turn's prompt (hashed once for all
// runs) when it holds them, as it does whenever there is one.
func (r *peerRun) warmPrompt(i int) (*cluster.Prompt, error) {
	w := r.p.w
	req := w.Req(i)
	n := req.InputLength + req.OutputLength
	if req.Next >= 0 && w.Req(req.Next).InputLength >= n {
		next, err := r.p.get(req.Next)
		if err != nil {
			return nil, err
		}
		full := min(n/w.BlockSize, len(next.Seq))
		return &cluster.Prompt{Tokens: next.Tokens[:n], Seq: next.Seq[:full], Keys: next.Keys[:full], Local: next.Local[:full]}, nil
	}
	return r.p.cl.Prompt(append(w.PromptTokens(i), w.OutputTokens(i)...))
}

// turnKeys are the L3 keys of request i's prompt and response pages.
func (r *peerRun) turnKeys(i int) ([]string, error) {
	w := r.p.w
	req := w.Req(i)
	n := req.InputLength + req.OutputLength
	if req.Next >= 0 && w.Req(req.Next).InputLength >= n {
		next, err := r.p.pr.hashes(req.Next)
		if err != nil {
			return nil, err
		}
		return next.Keys[:min(n/w.BlockSize, len(next.Keys))], nil
	}
	pr, err := r.p.pr.hashes(i)
	if err != nil {
		return nil, err
	}
	return pr.Keys, nil
}

// warmup plays the speculative prefill of request i's response.
func (r *peerRun) warmup(i int) error {
	p := r.p
	pr, err := r.warmPrompt(i)
	if err != nil {
		return err
	}
	wk, _, err := p.cl.Route(pr)
	if err != nil {
		return err
	}
	n := len(pr.Tokens)
	prefill := p.w.Service.PrefillTime(n)
	out, err := p.cl.Serve(wk, pr, n, prefill, p.cl.Now()+prefill)
	if err != nil {
		return err
	}
	cost := float64(out.RecomputedTokens) + p.cfg.Alpha*float64(out.L3Tokens)
	p.res.Warmups++
	p.res.WarmupTokens += int64(out.RecomputedTokens)
	p.res.WarmupCost += cost
	if o, ok := p.out[i]; ok {
		o.warmup = cost
		o.cost += cost
		p.out[i] = o
	}
	return nil
}

func (r *peerRun) finish(*ModeResult) {}
func (r *peerRun) close()             {}

// toolTimes are a tool's latest times, in arrival order (a ring of
// learnWindow) and sorted, for the quantile.
type toolTimes struct {
	ring   []time.Duration
	next   int
	sorted []time.Duration
}

func (t *toolTimes) add(d time.Duration) {
	if len(t.ring) < learnWindow {
		t.ring = append(t.ring, d)
	} else {
		old := t.ring[t.next]
		t.ring[t.next] = d
		t.next = (t.next + 1) % learnWindow
		k, _ := slices.BinarySearch(t.sorted, old)
		t.sorted = slices.Delete(t.sorted, k, k+1)
	}
	k, _ := slices.BinarySearch(t.sorted, d)
	t.sorted = slices.Insert(t.sorted, k, d)
}

// quantile is the nearest-rank q quantile of the times held.
func (t *toolTimes) quantile(q float64) time.Duration {
	k := int(math.Ceil(q * float64(len(t.sorted))))
	return t.sorted[min(max(k, 1), len(t.sorted))-1]
}
