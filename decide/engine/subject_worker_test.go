package engine

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// A worker publishing on its own subject must not speak for another:
// worker 2's user, allowed kv.events.2 and kv.load.2 only, once cleared
// worker 1's blocks and set its load by naming worker 1 in the body.
func TestBodyWorkerMustMatchSubject(t *testing.T) {
	lim := schemas.Limits{}
	var d kvevents.Decoder
	cases := []struct {
		name, subject, body string
		load                bool
		refused             bool
	}{
		{"kv event for another worker", "kv.events.2", `{"worker_id":1,"event":{"event_id":1,"data":"cleared"}}`, false, true},
		{"kv event for itself", "kv.events.2", `{"worker_id":2,"event":{"event_id":1,"data":"cleared"}}`, false, false},
		{"kv event on a queue subject", "kv.events", `{"worker_id":1,"event":{"event_id":1,"data":"cleared"}}`, false, false},
		{"load for another worker", "kv.load.2", `{"worker_id":1,"active_decode_blocks":50000}`, true, true},
		{"load for itself", "kv.load.2", `{"worker_id":2,"active_decode_blocks":5}`, true, false},
		{"load naming no worker", "kv.load.2", `{"active_decode_blocks":5}`, true, false},
	}
	for _, c := range cases {
		m := Message{Subject: c.subject, Data: []byte(c.body)}
		var err error
		if c.load {
			var l *schemas.ActiveLoad
			l, err = DecodeLoad(lim, m)
			if err == nil && l.WorkerID != 2 && c.subject == "kv.load.2" {
				t.Errorf("%s: load taken for worker %d", c.name, l.WorkerID)
			}
		} else {
			_, err = d.Decode(kvevents.Message{Subject: m.Subject, Header: m.Header, Data: m.Data})
		}
		var de *schemas.DecodeError
		switch {
		case c.refused && (!errors.As(err, &de) || de.Reason != kvevents.ReasonWorkerMismatch):
			t.Errorf("%s: err %v, want reason %q", c.name, err, kvevents.ReasonWorkerMismatch)
		case !c.refused && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		}
	}
}
