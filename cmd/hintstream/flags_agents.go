package main

import (
	"flag"

	"github.com/hintstream/hintstream/agentevents"
	"github.com/hintstream/hintstream/agents"
	"github.com/hintstream/hintstream/service"
)

// agentFlags registers --agents and the agent hints' policy (package
// agents, which defines --l3-bandwidth once) and returns what applies
// them. Off by default: on, run creates the AGENT_EVENTS stream and
// decodes every request that names an agent a second time.
func agentFlags(fs *flag.FlagSet) func(*service.Config) error {
	on := fs.Bool("agents", false, "agent-aware hints: follow nvext.agent_context, consume harness tool events (see docs/agents.md)")
	stream := fs.String("agent-events-stream", agentevents.DefaultStream, "stream of agent tool events (agent.events.>), created when absent (with --agents)")
	cfg := agents.DefaultConfig()
	cfg.RegisterFlags(fs)
	return func(c *service.Config) error {
		if !*on {
			return nil
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		a := cfg
		c.Agents, c.AgentEventsStream = &a, *stream
		return nil
	}
}
