package main

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service"
)

// boundsFlags registers the cardinality bounds of `run` (the
// socket budget, which endpoints a worker record may list, the tool
// labels of /metrics) and returns the function that validates them and
// sets them on a Config.
func boundsFlags(fs *flag.FlagSet) func(*service.Config) error {
	var (
		maxEndpoints = fs.Int("max-endpoints", zmqsend.DefaultMaxEndpoints, "most hint sockets open at once (ZeroMQ's socket limit; start-up raises the open-file limit to fit or fails); past it the least recently used idle one is closed")
		idleClose    = fs.Duration("sender-idle-close", zmqsend.DefaultIdleClose, "close a hint socket with nothing to send for this long; the next hint reopens it (0: never)")
		allowIPC     = fs.Bool("allow-ipc-endpoints", false, "accept ipc:// hint endpoints in worker records (only useful when hintstream runs on the workers' host)")
		maxDPRanks   = fs.Int("max-dp-ranks", schemas.DefaultMaxDPRanks, "most hint_endpoints (dp ranks) in one worker record; larger records are refused")
		topTools     = fs.Int("metrics-top-tools", observe.DefaultTopTools, "tool label values on /metrics: the most observed tools, the rest as tool=\"other\"")
	)
	return func(c *service.Config) error {
		if err := zmqsend.ValidateMaxEndpoints(*maxEndpoints); err != nil {
			return fmt.Errorf("--max-endpoints: %w", err)
		}
		if *idleClose < 0 {
			return fmt.Errorf("--sender-idle-close must not be negative, got %v", *idleClose)
		}
		if *maxDPRanks < 1 {
			return fmt.Errorf("--max-dp-ranks must be at least 1, got %d", *maxDPRanks)
		}
		if *topTools < 1 {
			return fmt.Errorf("--metrics-top-tools must be at least 1, got %d", *topTools)
		}
		c.MaxEndpoints, c.SenderIdleClose = *maxEndpoints, *idleClose
		if *idleClose == 0 {
			c.SenderIdleClose = service.Off // 0 means "never" on the command line
		}
		c.EndpointRules = schemas.EndpointRules{AllowIPC: *allowIPC, MaxDPRanks: *maxDPRanks}
		c.MetricsTopTools = *topTools
		return nil
	}
}
