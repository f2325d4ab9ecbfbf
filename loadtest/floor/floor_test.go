package floor

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/zmqtest"
	"github.com/hintstream/hintstream/schemas"
)

func TestForwardsWakeupsAsHintstreamWould(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(map[bool]string{false: "durable", true: "ordered"}[ordered], func(t *testing.T) {
			srv := natstest.Start(t)
			_, js := natstest.Connect(t, srv)
			ep, got := zmqtest.Pull(t, "tcp://127.0.0.1:*", 16)
			ctx, cancel := context.WithCancel(context.Background())
			ready, done := make(chan struct{}), make(chan error, 1)
			var st Stats
			go func() {
				done <- RunStats(ctx, Config{NATSURL: srv.ClientURL(), Endpoint: ep, Ordered: ordered,
					Ready: func() { close(ready) }}, &st)
			}()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("Run ended before consuming: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("not ready within 10s")
			}
			wake := schemas.RequestEvent{RequestID: "r-1", SessionID: "s", Model: "m", TokenIDs: []uint32{1, 2, 3},
				Headers: map[string]string{schemas.HeaderWakeup: "1"}, ReceivedAtMs: time.Now().UnixMilli()}
			plain := wake
			plain.RequestID, plain.Headers = "r-2", nil
			msgp, _ := wake.MarshalMsg(nil)
			plainJSON, _ := json.Marshal(plain)
			for _, body := range [][]byte{[]byte(`{"oops":1}`), plainJSON, msgp} {
				if _, err := js.Publish(ctx, "llm.requests.m", body); err != nil {
					t.Fatal(err)
				}
			}
			var b []byte
			select {
			case b = <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("no hint within 5s")
			}
			env, err := actions.NewPrefetchEnvelope(actions.Prefetch{RequestID: "r-1", SessionID: "s", Model: "m",
				TokenIDs: []uint32{1, 2, 3}, ExpiresAt: time.UnixMilli(wake.ReceivedAtMs).Add(2 * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := actions.EncodeEnvelope(env)
			if string(b) != string(want) {
				t.Fatalf("forwarded %x, want hintstream's envelope %x", b, want)
			}
			natstest.Eventually(t, 5*time.Second, func() bool { return st.Skipped.Load() == 2 }, "2 skipped")
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return within 10s of cancel")
			}
			if st.Forwarded.Load() != 1 || st.SendErrors.Load() != 0 {
				t.Fatalf("forwarded %d, send errors %d", st.Forwarded.Load(), st.SendErrors.Load())
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	if err := Run(context.Background(), Config{NATSURL: "nats://127.0.0.1:1"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("no endpoint: %v, want ErrConfig", err)
	}
	if err := Run(context.Background(), Config{Endpoint: "tcp://127.0.0.1:1"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("no URL: %v, want ErrConfig", err)
	}
}
