package main

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/ingest/requesttrace"
	"github.com/hintstream/hintstream/internal/dynamotrace"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// TestTurnIsWhatHintstreamReads: the stand-in's records decode with the
// request-trace decoder hintstream runs, their full-block hashes are the
// sequence hashes the KV event's blocks chain to, and the turns alternate
// tool calls and tool results on one session's worker.
func TestTurnIsWhatHintstreamReads(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(30*time.Second))
	defer cancel()
	for name, subj := range map[string]string{"TRACE": dynamotrace.DefaultSubject, "KV": "kv.events.>"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}}); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{Workers: 2, BlockSize: 16, Model: "m", Subject: dynamotrace.DefaultSubject, Log: slog.Default()}
	for n := range 2 {
		if err := Turn(ctx, js, o, n, uint64(n+1)); err != nil {
			t.Fatal(err)
		}
	}
	msgs := natstest.Messages(t, js, "TRACE")
	var ends []*requesttrace.Record
	for _, m := range msgs {
		rec, err := requesttrace.Limits{}.Decode(m.Data)
		if err != nil {
			t.Fatalf("record %s does not decode: %v", m.Data, err)
		}
		if rec.EventType == requesttrace.RequestEnd {
			ends = append(ends, rec)
		}
	}
	if len(msgs) != 4 || len(ends) != 2 {
		t.Fatalf("%d records, %d request_end; want a request_end and a tool record a turn", len(msgs), len(ends))
	}
	if ends[0].Response().FinishReason != "tool_calls" || ends[1].Response().FinishReason != "stop" {
		t.Errorf("finish reasons %q, %q: want a tool call, then its result's answer", ends[0].Response().FinishReason,
			ends[1].Response().FinishReason)
	}
	kv := natstest.Messages(t, js, "KV")
	if len(kv) != 2 {
		t.Fatalf("%d KV events, want one a turn", len(kv))
	}
	ev, err := schemas.Limits{}.DecodeRouterEvent(kv[1].Data)
	if err != nil {
		t.Fatal(err)
	}
	var local []uint64
	for _, b := range ev.Event.Data.Stored.Blocks {
		local = append(local, uint64(b.TokensHash))
	}
	if got := ends[1].Request.Replay.Full(); !slices.Equal(got, kvevents.SequenceHashes(local)) || len(got) != 8 {
		t.Errorf("turn 1's %d full-block hashes are not its KV event's %d blocks chained", len(got), len(local))
	}
	if !ends[1].Request.Replay.HasPartialTail() {
		t.Error("the prompt's partial last block has no hash, as Dynamo's trace gives one")
	}
}
