package consumers

import "context"

// Run is the consumers' one lifecycle: it starts the consumer
// unless Start already did (a caller that needs start-up errors and
// ordering, like service.Start, calls Start first), consumes until ctx is
// cancelled, then stops: fetching ends and the messages in hand are
// finished before Run returns. Its error is Start's; a running consumer
// retries what fails (a deleted consumer or stream) rather than return.

// Run starts the consumer if Start has not, and consumes until ctx is
// cancelled; then it stops, applying what was dispatched.
func (c *StateConsumer) Run(ctx context.Context) error {
	if c.stopping == nil {
		if err := c.Start(ctx); err != nil {
			return err
		}
	}
	<-ctx.Done()
	c.Stop()
	return nil
}

// Run starts the consumer if Start has not, and consumes until ctx is
// cancelled; then it stops, finishing the message in hand.
func (c *RequestConsumer) Run(ctx context.Context) error {
	return c.d.run(ctx, func() error { return c.Start(ctx) })
}

// Run starts the consumer if Start has not, and consumes until ctx is
// cancelled; then it stops, finishing the message in hand.
func (c *ResponseConsumer) Run(ctx context.Context) error {
	return c.d.run(ctx, func() error { return c.Start(ctx) })
}

func (d *durable) run(ctx context.Context, start func() error) error {
	if d.done == nil {
		if err := start(); err != nil {
			return err
		}
	}
	<-ctx.Done()
	d.stop()
	return nil
}
