package service

import (
	"flag"

	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/ingest/agentevents"
)

// registerPlannerFlags registers the flags of the parts that plan beyond
// one wake-up, off until their own flag turns them on: --agents and the
// agent hints' policy (agents.Config's flags, which define --l3-bandwidth
// and --kv-bytes-per-token). On, run creates the AGENT_EVENTS stream and
// decodes every request that names an agent a second time.
func (c *Config) registerPlannerFlags(fs *flag.FlagSet) {
	f := c.flags.run
	fs.BoolVar(&f.agentsOn, "agents", false, "agent-aware hints: follow nvext.agent_context, consume harness tool events (see docs/agents.md)")
	fs.StringVar(&f.agentsStream, "agent-events-stream", agentevents.DefaultStream, "stream of agent tool events (agent.events.>), created when absent (with --agents)")
	f.agents = agents.DefaultConfig()
	f.agents.RegisterFlags(fs)
}

// applyPlannerFlags validates the agent planner if its flag turned it on
// and sets it on c; otherwise it stays nil.
func (c *Config) applyPlannerFlags(f *runFlags) error {
	if f.agentsOn {
		if err := f.agents.Validate(); err != nil {
			return err
		}
		a := f.agents
		c.Agents, c.AgentEventsStream = &a, f.agentsStream
	}
	return nil
}
