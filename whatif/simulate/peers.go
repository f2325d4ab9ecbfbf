package simulate

import "time"

// The L3 store's eviction orders (Policy.L3Eviction).
const (
	// L3LRU is least recently used, pinned pages last: what Mooncake's
	// master does.
	L3LRU = "lru"
	// L3ARC is adaptive replacement (Megiddo and Modha, FAST '03), the
	// best online order of the eviction study (docs/eviction-study.md),
	// pinned pages last.
	L3ARC = "arc"
)

// Peer is a policy an operator may already run instead of hintstream,
// played by the same simulator on the same cluster. Each is written from
// its own source, which Source cites.
type Peer struct {
	// Source cites what the policy follows: file@commit, or a paper and
	// its section.
	Source string
	// SpeculativePrefill: at the end of every turn a one-token warm-up
	// of prompt + response is routed and prefilled, as Dynamo's
	// agent_hints.speculative_prefill does; no pins, no prefetch.
	SpeculativePrefill bool
	// ToolTTL pins a turn's prompt + response pages in L3 for this long
	// when the turn ends in a tool call; no wake-ups, no prefetch.
	ToolTTL time.Duration
	// LearnedTTL pins them instead for a TTL learned per tool from the
	// tool times seen so far (ToolTTL until one is seen).
	LearnedTTL bool
}

// Peers are the peer policies Simulate plays beside hintstream's, and
// hintstream on the best peer's eviction order (do hints and a better
// order add up?).
func Peers() []Policy {
	return []Policy{
		{Name: "Dynamo speculative prefill", Peer: &Peer{SpeculativePrefill: true,
			Source: "ai-dynamo/dynamo lib/llm/src/preprocessor/speculative_prefill.rs@141cf6d3, docs/agents/agent-hints.md@61ec97e3"}},
		{Name: "tool-call TTL (60 s)", Peer: &Peer{ToolTTL: 60 * time.Second,
			Source: "Continuum, arXiv 2511.02230 (its abstract: a KV-cache TTL on tool calls; 60 s is our assumption)"}},
		{Name: "tool-call TTL (learned per tool)", Peer: &Peer{ToolTTL: 60 * time.Second, LearnedTTL: true,
			Source: "Continuum, arXiv 2511.02230 (its abstract; the p90 of each tool's times is our estimator)"}},
		{Name: "ARC L3 eviction", L3Eviction: L3ARC, Peer: &Peer{
			Source: "Megiddo and Modha, FAST '03; docs/eviction-study.md"}},
		{Name: "today's + affinity on ARC L3", Affinity: true, L3Eviction: L3ARC},
	}
}
