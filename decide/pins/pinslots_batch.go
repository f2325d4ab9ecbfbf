package pins

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// renewReaders bounds the KV reads of one RenewBatch in flight at once.
const renewReaders = 32

// RenewBatch is Renew for many sessions in two pipelined rounds: the
// records are read concurrently, then every still-current one is
// rewritten with an asynchronous publish conditional on the revision
// read (so a Take in between wins, as in Renew), and the acks are
// awaited together. Results are in the order of rs.
func (p *PinSlots) RenewBatch(ctx context.Context, rs []SlotRenewal) []RenewResult {
	out := make([]RenewResult, len(rs))
	type read struct {
		rev uint64
		val []byte
	}
	reads := make([]read, len(rs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, renewReaders)
	for i, q := range rs {
		if q.Rev != 0 { // as we last wrote it: no read
			r := q.Record
			r.ExpiresAtMs = q.ExpiresAtMs
			b, err := json.Marshal(r)
			if err != nil {
				out[i].Err = err
				continue
			}
			reads[i] = read{rev: q.Rev, val: b}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			e, err := p.kv.Get(ctx, slotKey(q.Session))
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				return
			}
			if err != nil {
				out[i].Err = err
				return
			}
			var r PinRecord
			if json.Unmarshal(e.Value(), &r) != nil || r.Trigger != q.Trigger {
				return
			}
			r.ExpiresAtMs = q.ExpiresAtMs
			b, err := json.Marshal(r)
			if err != nil {
				out[i].Err = err
				return
			}
			reads[i] = read{rev: e.Revision(), val: b}
		}()
	}
	wg.Wait()
	acks := make([]jetstream.PubAckFuture, len(rs))
	for i, rd := range reads {
		if rd.val == nil {
			continue
		}
		f, err := p.js.PublishAsync(p.subject+slotKey(rs[i].Session), rd.val,
			p.publishOpts(PinRecord{ExpiresAtMs: rs[i].ExpiresAtMs}, jetstream.WithExpectLastSequencePerSubject(rd.rev))...)
		if err != nil {
			out[i].Err = err
			continue
		}
		acks[i] = f
	}
	for i, f := range acks {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			out[i].OK, out[i].Rev = true, ack.Sequence
		case err := <-f.Err():
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
				continue // taken or re-pinned meanwhile
			}
			out[i].Err = err
		case <-ctx.Done():
			out[i].Err = ctx.Err()
		}
	}
	return out
}

// putSlot records a session's pin and returns its revision (0 when the
// store keeps none).
func (p *Pinning) putSlot(ctx context.Context, session string, r PinRecord) (uint64, error) {
	return p.Slots.Put(ctx, session, r)
}
