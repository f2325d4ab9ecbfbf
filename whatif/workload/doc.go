// Package workload generates the traffic of hintstream's load tests: a
// time-ordered list of wake-ups, requests and responses, from synthetic
// agentic sessions or from a Mooncake-format trace, and publishes it to
// JetStream at trace time (times a speed factor) or as fast as possible.
//
// # Tokens
//
// A request is described as Mooncake's traces describe it: an input
// length and the ids of its 512-token blocks (hash_ids; equal ids mean
// equal content). Tokens are made from the ids, deterministically: token j
// of block h is uint32((h*BlockSize + j) mod 2^31). So equal ids give equal
// tokens, and every block hash hintstream computes (Dynamo's XXH3 chain,
// SGLang's SHA-256 pages) is the one the simulator computes from the same
// tokens. A trailing partial block uses the first tokens of its id.
//
// # Conversations in a trace
//
// A Mooncake trace has no session ids. Request R is the next turn of an
// earlier request E when E's full blocks (its hash_ids without a trailing
// partial block) are a prefix of R's hash_ids and R is at least as long as
// E's prompt plus E's output (a next turn holds the whole previous turn).
// Among several such E, the most recent one that has no next turn yet
// wins, longest prefix first. Requests sharing only a prefix (a common
// document or system prompt) are not turns of one conversation.
//
// # Tool calls and wake-ups in a trace
//
// A line that gives finish_reason (or tool) says whether its response
// ends in a tool call ("tool_calls"), and no rule changes that: its next
// turn is announced as a deployment would announce it (Signals). After a
// tool call, at the tool's end, which is the next request's time
// (SignalToolEnd: the harness's tool_end, no lead), or at the end the
// agent tracker predicts from the tool times learned so far
// (SignalPredicted, the default: decide/tooltime over the calls whose
// result came back before the call's request, at decide/agents'
// percentile and sample count; at the tool's end when the prediction is
// late or more than the prefetch TTL early). After a turn without a tool
// call (a human's), by a wake-up HumanLead ahead for a HumanShare of
// them (default none).
//
// A line without either keeps the assumed rule, the only one a Mooncake
// trace allows: every turn that has a next turn ends in a tool call
// (tool "trace_tool"), its tool time the gap from its response to the
// next turn, and the next turn is announced by a wake-up WakeupLead
// (default 1s) before it, but never before the tool call's response. A
// first turn gets no wake-up: nothing about it is known before it comes.
// The wake-up carries the prompt of the request it announces, as an
// agent framework knows it once the tool has returned.
//
// # Long-context coding agents
//
// GenerateAgent makes conversations to published statistics of
// agentic-coding sessions (agent.go): each distribution is fitted to the
// published quantiles only (ln of the value piecewise linear in the
// normal quantile through them), prompts grow turn by turn from a
// shared 15K-token prefix, and every turn's finish is known.
//
// # Synthetic sessions
//
// Generate makes sessions that start at exponential gaps and run a
// uniform number of turns. Every prompt opens with a system prompt shared
// by all sessions; each later turn's prompt is the previous prompt, its
// output and PromptGrowth new tokens (a tool result or a user message),
// so it extends the previous one token for token. A response is a tool
// call with probability ToolCallProb, followed by a log-normal tool time;
// otherwise by an exponential think time. Every turn after the first is
// announced by a wake-up WakeupLead before it (never before the previous
// response). The same seed gives the same workload.
//
// # Response times
//
// A response comes ServiceModel.Time after its request: prefill of the
// whole prompt at PrefillTokensPerSec (default 20,000) plus the output at
// DecodePerToken (default 20 ms); a turn's response is never later than
// its next turn. Times are fixed by the workload, not by any cache, so the
// runs being compared see the same timeline.
//
// # Long traces
//
// Spool builds the workload FromRecords builds, record by record, into
// files: memory keeps one entry per distinct prefix and named session,
// not per request. It is read through the same methods (Len, Req,
// EventRange), a request's ids read again from its source (Source) and
// set on it while it is held (Hold).
package workload
