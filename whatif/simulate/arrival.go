package simulate

import (
	"context"

	"github.com/hintstream/hintstream/whatif/cluster"
)

// A turn is told to the mode as it arrives, before it is served: a
// frontend publishes a request when it takes it, and the worker's KV
// events of its prefill come after. Told after serving, hintstream's
// index would already hold the blocks the turn itself computed, so
// whatever it measures at a turn (what a prefetch loaded that is still
// on the device, what a pin kept) would count the turn's own work.

// arrive tells h of request i, then serves it.
func (p *player) arrive(ctx context.Context, h hooks, i int) error {
	defer func() { p.arriving = nil }()
	pr, err := p.get(i)
	if err != nil {
		return err
	}
	p.arriving, p.arrivingReq = pr, i
	if err := h.request(ctx, i); err != nil {
		return err
	}
	_, err = p.serve(ctx, h, i)
	return err
}

// prompt is request i's prompt: the arriving one's, made once for its
// hook and serve, or made now.
func (p *player) prompt(i int) (*cluster.Prompt, error) {
	if p.arriving != nil && p.arrivingReq == i {
		return p.arriving, nil
	}
	return p.get(i)
}
