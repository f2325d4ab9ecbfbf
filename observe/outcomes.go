package observe

import (
	"net/http"
	"time"
)

// OutcomeView is one agent hint and its fate (GET /v1/outcomes).
type OutcomeView struct {
	ID           uint64    `json:"id"`
	Hint         string    `json:"hint"` // prefetch or pin
	Kind         string    `json:"kind"` // tool_start_pin, tool_end_prefetch, predicted_prefetch, speculative_prefetch
	Session      string    `json:"session"`
	WorkflowType string    `json:"workflow_type,omitempty"`
	ToolClass    string    `json:"tool_class,omitempty"`
	WorkerID     uint64    `json:"worker_id"`
	DpRank       uint32    `json:"dp_rank"`
	Tokens       int       `json:"tokens"`
	SentAt       time.Time `json:"sent_at"`
	Expires      time.Time `json:"expires"`
	Timing       string    `json:"timing,omitempty"`
	Outcome      string    `json:"outcome"`
	DecidedAt    time.Time `json:"decided_at"`
}

// OutcomesView answers GET /v1/outcomes, newest first.
type OutcomesView struct {
	Outcomes []OutcomeView `json:"outcomes"`
}

func (s Sources) outcomesView(*http.Request) (any, error) {
	v, ok := s.Outcomes()
	if !ok {
		return nil, &httpError{http.StatusNotFound, "agent hints are off on this instance (run --agents)"}
	}
	if v.Outcomes == nil {
		v.Outcomes = []OutcomeView{}
	}
	return v, nil
}
