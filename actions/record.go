package actions

import (
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

// HintRecord is one hint as a replay's dry run and a live run's
// --hints-log write it, one JSON line each, so the two can be compared.
type HintRecord struct {
	MessageID  string          `json:"message_id"`
	Endpoint   string          `json:"endpoint"`
	ActionType string          `json:"action_type"`
	Payload    json.RawMessage `json:"payload"`
}

// recordOf turns a hint into its HintRecord.
func recordOf(endpoint string, h Hint) (HintRecord, error) {
	var env schemas.KvHintsEnvelope
	if _, err := env.UnmarshalMsg(h.Body); err != nil {
		return HintRecord{}, err
	}
	if len(env.Actions) != 1 {
		return HintRecord{}, errors.New("actions: a hint with other than one action")
	}
	raw := msgp.Raw(env.Actions[0].Payload)
	js, err := raw.MarshalJSON()
	if err != nil {
		return HintRecord{}, err
	}
	return HintRecord{MessageID: env.MessageID, Endpoint: endpoint, ActionType: env.Actions[0].ActionType,
		Payload: js}, nil
}

// Recorder writes every hint that next accepts (every hint, when next is
// nil) as a HintRecord JSON line to w. It is safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	w    io.Writer
	next Sender
}

// NewRecorder records to w the hints handed on to next (nil: only records).
func NewRecorder(w io.Writer, next Sender) *Recorder { return &Recorder{w: w, next: next} }

// Send records h if next takes it (every h, when next is nil). The
// record is made before h is handed on: next may release the body
// (Hint.Release) as soon as it has sent it.
func (r *Recorder) Send(endpoint string, h Hint) error {
	rec, err := recordOf(endpoint, h)
	if err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if r.next != nil {
		if err := r.next.Send(endpoint, h); err != nil {
			return err
		}
	} else {
		// Recorded is as far as it goes.
		defer h.NotifyDone(true)
		defer h.NotifyRelease()
		defer h.NotifySent()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err = r.w.Write(append(b, '\n'))
	return err
}
