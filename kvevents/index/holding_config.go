package index

import "fmt"

// Holding area defaults (Holding keeps the KV events of workers not
// registered yet; see holding.go).
const (
	// DefaultHoldingWorkers is the number of unregistered worker ids whose
	// events are held: a deployment rolling out that many workers at
	// once, each publishing before it registers, loses none.
	DefaultHoldingWorkers = 256
	// DefaultHoldingBlocks caps the blocks (stored blocks plus removed
	// hashes, at least one per event) held per worker: 4,096 blocks of 16
	// tokens is one 64k-token prompt, more than a worker stores in the
	// seconds before it registers. With DefaultHoldingWorkers that bounds
	// the area to about 1M blocks, some 20 MiB.
	DefaultHoldingBlocks = 4096
	// DefaultHoldingSampleEvery dead-letters the first dropped message and
	// then one in this many.
	DefaultHoldingSampleEvery = 1024
)

// HoldingConfig bounds the holding area. Zero fields take the defaults.
type HoldingConfig struct {
	MaxWorkers         int // default DefaultHoldingWorkers
	MaxBlocksPerWorker int // default DefaultHoldingBlocks
	SampleEvery        int // default DefaultHoldingSampleEvery
}

// Validate rejects negative bounds.
func (c HoldingConfig) Validate() error {
	if c.MaxWorkers < 0 || c.MaxBlocksPerWorker < 0 || c.SampleEvery < 0 {
		return fmt.Errorf("holding area: negative bound in %+v", c)
	}
	return nil
}

// WithDefaults fills zero fields with their defaults.
func (c HoldingConfig) WithDefaults() HoldingConfig {
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = DefaultHoldingWorkers
	}
	if c.MaxBlocksPerWorker <= 0 {
		c.MaxBlocksPerWorker = DefaultHoldingBlocks
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = DefaultHoldingSampleEvery
	}
	return c
}
