package pins

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/zmqtest"
	"github.com/hintstream/hintstream/schemas"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func pinSink(t *testing.T) (string, <-chan schemas.PinPayload) { return zmqtest.PinSink(t) }

// nextPin is the next pin the sink got, failing the test after 10 s.
func nextPin(t *testing.T, got <-chan schemas.PinPayload) schemas.PinPayload {
	t.Helper()
	select {
	case pl := <-got:
		return pl
	case <-time.After(10 * time.Second):
		t.Fatal("no pin within 10s")
	}
	return schemas.PinPayload{}
}
