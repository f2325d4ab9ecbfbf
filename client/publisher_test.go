package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func setupStreams(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	if _, err := streams.EnsureSet(context.Background(), js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	return js
}

// lastOn reads the last message on subject back from the stream.
func lastOn(t *testing.T, js jetstream.JetStream, stream, subject string) *jetstream.RawStreamMsg {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(context.Background(), subject)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func streamMsgs(t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestPublishBothFormatsDecodeAsHintstreamDoes(t *testing.T) {
	js := setupStreams(t)
	ctx := context.Background()
	def := streams.DefaultSet()
	for _, f := range []Format{JSON, Msgpack} {
		p, err := NewPublisher(js, WithFormat(f))
		if err != nil {
			t.Fatal(err)
		}
		id := map[Format]string{JSON: "r-json", Msgpack: "r-msgpack"}[f]
		req := &schemas.RequestEvent{RequestID: id, SessionID: "s", Model: "Qwen/Qwen3-8B", TokenIDs: []uint32{1, 2, 3},
			Headers: map[string]string{schemas.HeaderWakeup: "1"}, ReceivedAtMs: 17}
		resp := &schemas.ResponseEvent{RequestID: id, Model: "Qwen/Qwen3-8B", WorkerID: 7, FinishReason: "tool_calls",
			ToolCalls: []schemas.ToolCall{{Name: "search"}}, OutputTokenIDs: []uint32{4}, CompletedAtMs: 18}
		if err := p.PublishRequest(ctx, req); err != nil {
			t.Fatal(err)
		}
		if err := p.PublishResponse(ctx, resp); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		m := lastOn(t, js, def.Requests.Name, streams.RequestSubject(req.Model))
		got, err := schemas.DecodeRequest(m.Data, m.Header.Get("Content-Type"))
		if err != nil {
			t.Fatalf("%v: hintstream's decoder rejects the request: %v", f, err)
		}
		if got.RequestID != id || got.Headers[schemas.HeaderWakeup] != "1" || len(got.TokenIDs) != 3 || got.ReceivedAtMs != 17 {
			t.Fatalf("%v: request read back as %+v", f, got)
		}
		if mid := m.Header.Get(jetstream.MsgIDHeader); mid != "wake:"+id {
			t.Fatalf("%v: Nats-Msg-Id %q", f, mid)
		}
		if f == Msgpack && m.Data[0] < 0x80 {
			t.Fatalf("msgpack publisher sent %q", m.Data)
		}
		m = lastOn(t, js, def.Responses.Name, streams.ResponseSubject(resp.Model))
		gotR, err := schemas.DecodeResponse(m.Data, m.Header.Get("Content-Type"))
		if err != nil {
			t.Fatalf("%v: hintstream's decoder rejects the response: %v", f, err)
		}
		if gotR.WorkerID != 7 || gotR.FinishReason != "tool_calls" || len(gotR.ToolCalls) != 1 {
			t.Fatalf("%v: response read back as %+v", f, gotR)
		}
		if err := p.PublishRequest(ctx, req); !errors.Is(err, ErrClosed) {
			t.Fatalf("publish after Close: %v", err)
		}
	}
}

func TestRetryIsDroppedAsDuplicate(t *testing.T) {
	js := setupStreams(t)
	ctx := context.Background()
	p, err := NewPublisher(js)
	if err != nil {
		t.Fatal(err)
	}
	req := &schemas.RequestEvent{RequestID: "retry-me", Model: "m"}
	for range 3 {
		if err := p.PublishRequest(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// A wake-up and the turn after it may share a request id: not duplicates.
	if err := p.PublishRequest(ctx, &schemas.RequestEvent{RequestID: "retry-me", Model: "m",
		Headers: map[string]string{"X-Dynamo-Experimental-Wakeup": "true"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.PublishResponse(ctx, &schemas.ResponseEvent{RequestID: "retry-me", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	def := streams.DefaultSet()
	if n := streamMsgs(t, js, def.Requests.Name); n != 2 {
		t.Fatalf("requests stream holds %d messages, want 2 (one request, one wake-up)", n)
	}
	if n := streamMsgs(t, js, def.Responses.Name); n != 1 {
		t.Fatalf("responses stream holds %d messages, want 1", n)
	}
}

func TestInFlightBoundAndContext(t *testing.T) {
	srv := natstest.Start(t)
	nc, _ := natstest.Connect(t, srv)
	// No stream, but a subscriber that never answers: every publish stays
	// in flight until the async ack timeout fails it.
	sub, err := nc.Subscribe("llm.requests.>", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPublisher(js, WithMaxInFlight(2))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		if err := p.PublishRequest(ctx, &schemas.RequestEvent{RequestID: string(rune('a' + i)), Model: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := p.PublishRequest(short, &schemas.RequestEvent{RequestID: "c", Model: "m"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third publish with two in flight: %v, want it to wait and give up", err)
	}
	long, cancel2 := context.WithTimeout(ctx, 30*time.Second)
	defer cancel2()
	if err := p.Flush(long); err == nil {
		t.Fatal("Flush reported no error for publishes no stream took")
	}
	if err := p.Flush(long); err != nil {
		t.Fatalf("a second Flush repeated old errors: %v", err)
	}
}

func TestPublisherRejects(t *testing.T) {
	js := setupStreams(t)
	if _, err := NewPublisher(js, WithMaxInFlight(0)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("max in flight 0: %v", err)
	}
	if _, err := NewPublisher(js, WithFormat(Format(9))); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("format 9: %v", err)
	}
	p, _ := NewPublisher(js)
	if err := p.PublishRequest(context.Background(), &schemas.RequestEvent{Model: "m"}); !errors.Is(err, ErrMissingRequestID) {
		t.Fatalf("request without id: %v", err)
	}
	if err := p.PublishResponse(context.Background(), nil); !errors.Is(err, ErrMissingRequestID) {
		t.Fatalf("nil response: %v", err)
	}
}
