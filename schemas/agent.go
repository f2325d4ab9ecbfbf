package schemas

import "unicode/utf8"

// Dynamo's request extensions for agents, as its frontend receives them in
// a chat request's nvext object:
//
//   - agent_context, the agent's identity on every LLM call
//     (ai-dynamo/dynamo lib/llm/src/agents/context.rs@ef191681 and
//     docs/agents/agent-context.md@02006211: workflow_type_id, workflow_id
//     and program_id required and non-empty, parent_program_id optional);
//   - agent_hints, serving hints (lib/llm/src/protocols/openai/nvext.rs@
//     9a541b0c, docs/agents/agent-hints.md@61ec97e3: priority i32,
//     strict_priority u32, osl u32, speculative_prefill bool).
//
// Dynamo's NvExt carries many more members (annotations, token_data,
// session_control, ...); they are not ours and are skipped, as every
// unknown field of our events is. Later Dynamo versions renamed the
// identity to session_type_id / session_id / trajectory_id
// (context.rs@d3fe8712); the harness records this package reads
// (agentevents) and the docs the frontend follows name the workflow
// form, which is the one decoded here.

// NvExt is the part of Dynamo's nvext object hintstream reads.
type NvExt struct {
	AgentContext *AgentContext `msg:"agent_context,omitempty" json:"agent_context,omitempty"`
	AgentHints   *AgentHints   `msg:"agent_hints,omitempty" json:"agent_hints,omitempty"`
}

// AgentContext names the agent a request (or a harness's tool record)
// belongs to.
type AgentContext struct {
	WorkflowTypeID  string `msg:"workflow_type_id" json:"workflow_type_id"`
	WorkflowID      string `msg:"workflow_id" json:"workflow_id"`
	ProgramID       string `msg:"program_id" json:"program_id"`
	ParentProgramID string `msg:"parent_program_id,omitempty" json:"parent_program_id,omitempty"`
}

// AgentHints are the caller's serving hints. Zero is "not given" for each:
// Dynamo's are all optional and 0/false is their neutral value.
type AgentHints struct {
	Priority           int32  `msg:"priority" json:"priority,omitempty"`
	StrictPriority     uint32 `msg:"strict_priority" json:"strict_priority,omitempty"`
	Osl                uint32 `msg:"osl" json:"osl,omitempty"`
	SpeculativePrefill bool   `msg:"speculative_prefill" json:"speculative_prefill,omitempty"`
}

// DefaultMaxAgentID bounds each agent_context identifier, in bytes. Dynamo
// sets no bound; hintstream keys pin slots, affinity records and tool
// state by them, so a hostile megabyte id must not reach those stores.
const DefaultMaxAgentID = 1024

// SessionSeparator joins workflow_id and program_id into a session id. A
// program id is unique only within its workflow (a subagent's
// "researcher" recurs in every run), so the workflow qualifies it.
const SessionSeparator = "/"

// AgentSession is the session id of an agent's program: workflow_id and
// program_id joined by SessionSeparator, "" without a program.
func AgentSession(c *AgentContext) string {
	if c == nil || c.ProgramID == "" {
		return ""
	}
	return c.WorkflowID + SessionSeparator + c.ProgramID
}

// Context returns the agent context, or nil.
func (n *NvExt) Context() *AgentContext {
	if n == nil {
		return nil
	}
	return n.AgentContext
}

// Hints returns the agent hints, or the zero AgentHints.
func (n *NvExt) Hints() AgentHints {
	if n == nil || n.AgentHints == nil {
		return AgentHints{}
	}
	return *n.AgentHints
}

// CheckAgentContext returns the DecodeError reason of an agent context
// that breaks Dynamo's rules or maxID (0: DefaultMaxAgentID), "" when it
// is sound. A nil context is sound.
func CheckAgentContext(c *AgentContext, maxID int) string {
	if c == nil {
		return ""
	}
	if maxID <= 0 {
		maxID = DefaultMaxAgentID
	}
	for _, f := range [...]struct {
		name, v  string
		required bool
	}{
		{"workflow_type_id", c.WorkflowTypeID, true}, {"workflow_id", c.WorkflowID, true},
		{"program_id", c.ProgramID, true}, {"parent_program_id", c.ParentProgramID, false},
	} {
		switch {
		case f.required && f.v == "":
			return "agent_context missing " + f.name
		case len(f.v) > maxID:
			return "agent_context " + f.name + " too long"
		case !utf8.ValidString(f.v):
			return "invalid UTF-8"
		}
	}
	return ""
}

// AgentDecodeReasons are the reasons CheckAgentContext gives, for counters
// listed at 0 from start-up.
var AgentDecodeReasons = func() []string {
	var r []string
	for _, f := range []string{"workflow_type_id", "workflow_id", "program_id", "parent_program_id"} {
		if f != "parent_program_id" {
			r = append(r, "agent_context missing "+f)
		}
		r = append(r, "agent_context "+f+" too long")
	}
	return r
}()

// checkNvExt validates ev's nvext and, when the event names no session,
// gives it the agent's (AgentSession). It returns a DecodeError reason or "".
func checkNvExt(n *NvExt, session *string) string {
	c := n.Context()
	if reason := CheckAgentContext(c, 0); reason != "" {
		return reason
	}
	if *session == "" {
		*session = AgentSession(c)
	}
	return ""
}
