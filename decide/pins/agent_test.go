package pins

import (
	"testing"

	"github.com/hintstream/hintstream/schemas"
)

// TestAgentPriority: agent_hints.priority raises the pin's priority, from
// the request or the response, capped; negative never lowers it.
func TestAgentPriority(t *testing.T) {
	with := func(p int32) *schemas.NvExt { return &schemas.NvExt{AgentHints: &schemas.AgentHints{Priority: p}} }
	for _, tc := range []struct {
		req, resp *schemas.NvExt
		base      int
		want      int
	}{
		{nil, nil, 40, 40},
		{with(10), nil, 40, 50},
		{nil, with(7), 40, 47},
		{with(3), with(9), 40, 49},
		{with(-20), nil, 40, 40},
		{with(1 << 30), nil, 40, MaxPinPriority},
	} {
		got := agentPriority(tc.base, &schemas.RequestEvent{NvExt: tc.req}, &schemas.ResponseEvent{NvExt: tc.resp})
		if got != tc.want {
			t.Errorf("req %v resp %v: %d, want %d", tc.req.Hints(), tc.resp.Hints(), got, tc.want)
		}
	}
}
