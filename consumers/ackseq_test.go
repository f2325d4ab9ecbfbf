package consumers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestStreamSeqMatchesMetadata holds streamSeq to nats.go's own
// Metadata on real deliveries (an ordered consumer, as the state
// consumer uses), and to GetMetadataFields' rules on subjects a server
// does not send.
func TestStreamSeqMatchesMetadata(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SEQ", Subjects: []string{"seq.>"}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		if _, err := js.Publish(ctx, fmt.Sprintf("seq.%d", i%3), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]int{"ordered": n * 2 / 3, "durable": n} {
		var c jetstream.Consumer
		if name == "ordered" {
			c, err = s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"seq.1", "seq.2"}})
		} else {
			c, err = s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "d", AckPolicy: jetstream.AckExplicitPolicy})
		}
		if err != nil {
			t.Fatal(err)
		}
		batch, err := c.Fetch(want, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			if seq := streamSeq(m.Reply()); seq != md.Sequence.Stream || seq == 0 {
				t.Fatalf("%s: streamSeq(%q) = %d, Metadata says %d", name, m.Reply(), seq, md.Sequence.Stream)
			}
			// deliveryOf's fields too.
			d := deliveryOf(m, nil)
			if d.Unknown != nil || d.Seq != md.Sequence.Stream || !d.Time.Equal(md.Timestamp) || d.Delivered != md.NumDelivered {
				t.Fatalf("%s: delivery %+v, Metadata %+v", name, d, md)
			}
			got++
		}
		if got != want {
			t.Fatalf("%s: %d messages delivered, want %d", name, got, want)
		}
	}
	for reply, want := range map[string]uint64{
		"$JS.ACK.S.C.1.42.7.1700000000000000000.0":                 42,
		"$JS.ACK._.ACCHASH.S.C.1.43.7.1700000000000000000.0.rnd":   43,
		"$JS.ACK.dom.ACCHASH.S.C.1.44.7.1700000000000000000.0":     44, // 11 tokens: valid v2
		"$JS.ACK.dom.ACCHASH.S.C.1.45.7.1700000000000000000.0.r.x": 45, // more tokens
		"$JS.ACK.S.C.1.42.7.1700000000000000000":                   0,  // 8 tokens
		"$JS.ACK.S.C.1.42.7.1700000000000000000.0.x":               0,  // 10 tokens
		"$JS.NAK.S.C.1.42.7.1700000000000000000.0":                 0,
		"$JS.ACK.S.C.1.4x2.7.1700000000000000000.0":                0,
		"$JS.ACK.S.C.1..7.1700000000000000000.0":                   0,
		"$JS.ACK.S.C.1.٤٢.7.1700000000000000000.0":                 0, // non-ASCII digits
		"$JS.ACK.S.C.1.18446744073709551617.7.1.0":                 1, // wraps, as ParseNum
		"": 0,
	} {
		if got := streamSeq(reply); got != want {
			t.Errorf("streamSeq(%q) = %d, want %d", reply, got, want)
		}
	}
}

// BenchmarkStreamSeq compares nats.go's Metadata with streamSeq on one
// delivered message, in one run:
//
//	go test -run '^$' -bench StreamSeq -count 5 ./consumers/
func BenchmarkStreamSeq(b *testing.B) {
	srv := natstest.Start(b)
	_, js := natstest.Connect(b, srv)
	ctx := context.Background()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SEQ", Subjects: []string{"seq.>"}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.Publish(ctx, "seq.1", []byte("x")); err != nil {
		b.Fatal(err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("metadata", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if md, err := m.Metadata(); err != nil || md.Sequence.Stream != 1 {
				b.Fatal(md, err)
			}
		}
	})
	b.Run("streamSeq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if streamSeq(m.Reply()) != 1 {
				b.Fatal(m.Reply())
			}
		}
	})
}

// refAckFields is nats.go's GetMetadataFields and ParseNum written the
// plain way (split, then index), for FuzzStreamSeq.
func refAckFields(reply string) (ackFields, bool) {
	t := strings.Split(reply, ".")
	if len(t) < 9 || (len(t) > 9 && len(t) < 11) || !strings.HasPrefix(reply, "$JS.ACK.") {
		return ackFields{}, false
	}
	if len(t) == 9 { // v1: no domain, no account hash
		t = append([]string{t[0], t[1], "", ""}, t[2:]...)
	}
	num := func(tok string) uint64 {
		var n uint64
		for _, r := range tok {
			if r < '0' || r > '9' {
				return 0
			}
			n = n*10 + uint64(r-'0')
		}
		return n
	}
	return ackFields{delivered: num(t[6]), streamSeq: num(t[7]), timestamp: num(t[9])}, true
}

func refStreamSeq(reply string) uint64 {
	f, _ := refAckFields(reply)
	return f.streamSeq
}

// FuzzStreamSeq holds streamSeq and ackFieldsOf to the plain reference
// on any subject.
func FuzzStreamSeq(f *testing.F) {
	f.Add("$JS.ACK.S.C.1.42.7.1700000000000000000.0")
	f.Add("$JS.ACK._.ACCHASH.S.C.1.43.7.1700000000000000000.0.rnd")
	f.Add("$JS.ACK.S.C.1.4x2.7.1.0")
	f.Add("")
	f.Fuzz(func(t *testing.T, reply string) {
		if got, want := streamSeq(reply), refStreamSeq(reply); got != want {
			t.Fatalf("streamSeq(%q) = %d, reference %d", reply, got, want)
		}
		got, ok := ackFieldsOf(reply)
		if want, wantOK := refAckFields(reply); got != want || ok != wantOK {
			t.Fatalf("ackFieldsOf(%q) = %+v %v, reference %+v %v", reply, got, ok, want, wantOK)
		}
	})
}
