package service

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/schemas"
)

// registerSenderFlags registers the hint senders' flags: the queue, the
// settle delay and the held-trigger bound of each endpoint, and the
// socket budget and endpoint rules (which endpoints a worker record may
// list), the cardinality bounds of the senders.
func (c *Config) registerSenderFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.SenderQueue, "sender-queue", zmqsend.DefaultQueueSize, "hints queued per endpoint before new ones are dropped")
	fs.DurationVar(&c.SenderSettleDelay, "sender-settle-delay", zmqsend.DefaultSettleDelay, "ack a trigger this long after ZMQ took its hint, so a crash before ZMQ wrote it out loses no trigger (0: at once)")
	fs.IntVar(&c.SenderMaxHeld, "sender-max-held", zmqsend.DefaultMaxHeld, "triggers one endpoint's waiting hints may keep unacked; past it they are acked when queued, so a slow worker cannot take every --max-ack-pending slot (0: no bound)")
	fs.IntVar(&c.MaxEndpoints, "max-endpoints", zmqsend.DefaultMaxEndpoints, "most hint sockets open at once (ZeroMQ's socket limit; start-up raises the open-file limit to fit or fails); past it the least recently used idle one is closed")
	fs.DurationVar(&c.SenderIdleClose, "sender-idle-close", zmqsend.DefaultIdleClose, "close a hint socket with nothing to send for this long; the next hint reopens it (0: never)")
	fs.BoolVar(&c.EndpointRules.AllowIPC, "allow-ipc-endpoints", false, "accept ipc:// hint endpoints in worker records (only useful when hintstream runs on the workers' host)")
	fs.IntVar(&c.EndpointRules.MaxDPRanks, "max-dp-ranks", schemas.DefaultMaxDPRanks, "most hint_endpoints (dp ranks) in one worker record; larger records are refused")
}

// applySenderFlags takes the command line's 0 as Immediately (settle
// delay), NoBound (held triggers) and Off (idle close), and checks the
// socket budget and endpoint rules.
func (c *Config) applySenderFlags(*runFlags) error {
	switch {
	case c.SenderQueue < 1:
		return flagError("--sender-queue must be at least 1, got %d", c.SenderQueue)
	case c.SenderSettleDelay < 0:
		return flagError("--sender-settle-delay must not be negative, got %v", c.SenderSettleDelay)
	case c.SenderSettleDelay == 0:
		c.SenderSettleDelay = Immediately // 0 means "at once" on the command line
	}
	c.SenderMaxHeld = heldOrNone(c.SenderMaxHeld)
	if err := zmqsend.ValidateMaxEndpoints(c.MaxEndpoints); err != nil {
		return fmt.Errorf("--max-endpoints: %w", err)
	}
	switch {
	case c.SenderIdleClose < 0:
		return flagError("--sender-idle-close must not be negative, got %v", c.SenderIdleClose)
	case c.SenderIdleClose == 0:
		c.SenderIdleClose = Off // 0 means "never" on the command line
	}
	if c.EndpointRules.MaxDPRanks < 1 {
		return flagError("--max-dp-ranks must be at least 1, got %d", c.EndpointRules.MaxDPRanks)
	}
	return nil
}

// heldOrNone maps the command line's 0 (no bound) to NoBound.
func heldOrNone(n int) int {
	if n <= 0 {
		return NoBound
	}
	return n
}
