package actions_test

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
)

// newPool is a ZeroMQ sender for the wire tests: envelopes built here
// travel to independent peers over a real socket.
func newPool(t *testing.T) *zmqsend.Pool {
	t.Helper()
	p, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		p.Close(ctx)
	})
	return p
}
