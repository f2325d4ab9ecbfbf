package pins

import (
	"io"
	"log/slog"
	"testing"

	"github.com/hintstream/hintstream/internal/zmqtest"
	"github.com/hintstream/hintstream/schemas"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func pinSink(t *testing.T) (string, <-chan schemas.PinPayload) { return zmqtest.PinSink(t) }
