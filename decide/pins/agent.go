package pins

import "github.com/hintstream/hintstream/schemas"

// MaxPinPriority is the top of actions.Priority's scale.
const MaxPinPriority = 100

// agentPriority raises a pin's priority (from the tokens a miss would
// recompute) by the turn's Dynamo agent_hints.priority, higher meaning
// more important as in Dynamo (docs/agents/agent-hints.md@61ec97e3),
// capped at MaxPinPriority. A negative or absent hint leaves it: the
// hint can ask for more retention, never for less than a miss costs.
func agentPriority(base int, req *schemas.RequestEvent, resp *schemas.ResponseEvent) int {
	p := req.NvExt.Hints().Priority
	if rp := resp.NvExt.Hints().Priority; rp > p {
		p = rp
	}
	if p <= 0 {
		return base
	}
	return int(min(int64(base)+int64(p), MaxPinPriority))
}
