package consumers

import (
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// ApplyKV is the ApplyFunc of a KV-event consumer: each message is
// decoded within lim (kvevents.Decoder.Decode) and its batch handed to a
// (index.Applier.Apply), unless its subject names a worker a does not
// keep, which is known without decoding (index.Applier.Skips). A replay
// applies its stored messages through the same function.
//
// The decoders are pooled: their memory (a RouterEvent, the events and
// their blocks) is garbage once applied, since the index copies what it
// keeps and the holding area clones what it holds (index.Index).
func ApplyKV(a *index.Applier, lim schemas.Limits) ApplyFunc {
	decoders := sync.Pool{New: func() any { return &kvevents.Decoder{Limits: lim} }}
	return func(msg jetstream.Msg) error {
		subject := msg.Subject()
		if a.Skips(subject) {
			return nil
		}
		d := decoders.Get().(*kvevents.Decoder)
		defer decoders.Put(d)
		b, err := d.Decode(kvevents.Message{Subject: subject, Header: msg.Headers(), Data: msg.Data()})
		if err != nil {
			return err
		}
		return a.Apply(b)
	}
}
