package receiver

import "fmt"

// WithMaxMessageSize makes the socket refuse messages over n bytes
// (ZMQ_MAXMSGSIZE: libzmq disconnects a sender whose message header
// claims more, before allocating it); default no limit. Without it one
// sender's 1 GiB frame is 1 GiB of the receiver's memory.
func WithMaxMessageSize(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("%w: max message size %d, want > 0", ErrInvalidOption, n)
		}
		o.maxMsg = n
		return nil
	}
}
