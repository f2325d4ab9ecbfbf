package service

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/ingest/agentevents"
)

// registerPlannerFlags registers the flags of the parts that plan beyond
// one wake-up, each off until its own flag turns it on:
//
//   - --agents and the agent hints' policy (agents.Config's flags, which
//     define --l3-bandwidth and --kv-bytes-per-token once for both).
//     On, run creates the AGENT_EVENTS stream and decodes every request
//     that names an agent a second time.
//   - the retention planner (retention.Config's and GroupConfig's flags),
//     on when --l3-pin-budget is set.
func (c *Config) registerPlannerFlags(fs *flag.FlagSet) {
	f := c.flags.run
	fs.BoolVar(&f.agentsOn, "agents", false, "agent-aware hints: follow nvext.agent_context, consume harness tool events (see docs/agents.md)")
	fs.StringVar(&f.agentsStream, "agent-events-stream", agentevents.DefaultStream, "stream of agent tool events (agent.events.>), created when absent (with --agents)")
	f.agents = agents.DefaultConfig()
	f.agents.RegisterFlags(fs)

	fs.BoolVar(&f.groupOn, "retention-group", true, "one retention planner for the consumer group: members relay what they observe on core NATS and only the holder of a KV lock sends pins; false: each member plans alone over its share of the requests")
	f.retention.RegisterFlags(fs)
	f.retentionGroup.RegisterFlags(fs)
}

// applyPlannerFlags validates each planner its flag turned on and sets
// it on c; the others stay nil.
func (c *Config) applyPlannerFlags(f *runFlags) error {
	if f.agentsOn {
		if err := f.agents.Validate(); err != nil {
			return err
		}
		a := f.agents
		c.Agents, c.AgentEventsStream = &a, f.agentsStream
	}
	if f.retention.BudgetSet() {
		if err := c.applyRetentionFlags(f); err != nil {
			return err
		}
	}
	return nil
}

// applyRetentionFlags sets the retention planner, sized with
// --kv-bytes-per-token, and with --retention-group its group.
func (c *Config) applyRetentionFlags(f *runFlags) error {
	rc := f.retention
	rc.KVBytesPerToken = f.agents.KVBytesPerToken
	if err := rc.CheckFlags(); err != nil {
		return err
	}
	if err := rc.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("retention planner: %w", err)
	}
	c.Retention = &rc
	if !f.groupOn {
		return nil
	}
	g := f.retentionGroup
	check := g
	if check.Elector.Member == "" {
		check.Elector.Member = "check"
	}
	if err := check.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("retention planner group: %w", err)
	}
	c.RetentionGroup = &g
	return nil
}
