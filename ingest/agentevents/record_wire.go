package agentevents

import "github.com/tinylib/msgp/msgp"

//go:generate go tool msgp -file record_wire.go -o record_wire_gen.go -tests=false -io=false -unexported

//msgp:marshal ignore wireRecord wireContextFields wireToolFields
//msgp:size ignore wireRecord wireContextFields wireToolFields

// wireRecord is Dynamo's AgentTraceRecord as msgp reads it. Its members
// are kept raw (nil reads as absent) and typed by fromWire, which checks
// them in Dynamo's order and gives serde's reasons (missing, wrong type,
// out of range) whatever the order of the keys.
type wireRecord struct {
	Schema          msgp.Raw `msg:"schema"`
	EventType       msgp.Raw `msg:"event_type"`
	EventTimeUnixMs msgp.Raw `msg:"event_time_unix_ms"`
	EventSource     msgp.Raw `msg:"event_source"`
	Request         msgp.Raw `msg:"request"`
	AgentContext    msgp.Raw `msg:"agent_context"`
	Tool            msgp.Raw `msg:"tool"`

	ctx  wireContextFields `msg:"-"` // AgentContext decoded
	tool wireToolFields    `msg:"-"` // Tool decoded
}

// wireContextFields is the agent_context map (schemas.AgentContext).
type wireContextFields struct {
	WorkflowTypeID  msgp.Raw `msg:"workflow_type_id"`
	WorkflowID      msgp.Raw `msg:"workflow_id"`
	ProgramID       msgp.Raw `msg:"program_id"`
	ParentProgramID msgp.Raw `msg:"parent_program_id"`
}

// wireToolFields is the tool map.
type wireToolFields struct {
	ToolCallID      msgp.Raw `msg:"tool_call_id"`
	ToolClass       msgp.Raw `msg:"tool_class"`
	Status          msgp.Raw `msg:"status"`
	DurationMs      msgp.Raw `msg:"duration_ms"`
	StartedAtUnixMs msgp.Raw `msg:"started_at_unix_ms"`
	EndedAtUnixMs   msgp.Raw `msg:"ended_at_unix_ms"`
	OutputTokens    msgp.Raw `msg:"output_tokens"`
	OutputBytes     msgp.Raw `msg:"output_bytes"`
	ToolNameHash    msgp.Raw `msg:"tool_name_hash"`
	ErrorType       msgp.Raw `msg:"error_type"`
}
