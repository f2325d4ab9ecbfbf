package service

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/decide/engine"
)

// TestAgentsFollowTheEnginesEvents: with agent hints on, the engine the
// service builds has the tracker among its observers, so the request
// consumer's decisions (Engine.Request, with no wrapper decoding the
// message again) are all the tracker needs to follow an agent's turn.
func TestAgentsFollowTheEnginesEvents(t *testing.T) {
	cfg := agents.DefaultConfig()
	s := New(Config{Agents: &cfg, NoAffinity: true, Logger: quietLog})
	s.startHolding()
	if err := s.startEngine(context.Background(), &starting{sender: actions.NewRecorder(nil, nil)}); err != nil {
		t.Fatal(err)
	}
	if s.agents == nil {
		t.Fatal("agent hints on, no tracker")
	}
	m := engine.Message{Subject: "llm.requests.m", Data: []byte(`{"request_id":"a-1","model":"m","token_ids":[1,2,3,4],` +
		`"nvext":{"agent_context":{"workflow_type_id":"t","workflow_id":"w","program_id":"p"}}}`)}
	if out := s.engine.Request(context.Background(), engine.Delivery{Delivered: 1, Time: time.Now()}, m); out.Verdict != engine.Ack {
		t.Fatalf("request: %v %v", out.Verdict, out.Err)
	}
	if n := s.agents.Programs(); n != 1 {
		t.Fatalf("the tracker follows %d programs after the engine decided on an agent's turn, want 1", n)
	}
}
