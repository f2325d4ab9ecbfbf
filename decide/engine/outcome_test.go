package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/hintstream/hintstream/schemas"
)

func TestOutcomes(t *testing.T) {
	if o := Done(); o.Verdict != Ack || o.Verdict.String() != "ack" {
		t.Fatalf("Done: %+v", o)
	}
	if o := RetryAfter(time.Second, errors.New("x")); o.Verdict != Retry || o.RetryAfter != time.Second || o.Err == nil {
		t.Fatalf("RetryAfter: %+v", o)
	}
	if o := HeldUntilSent(); o.Verdict != Held || o.Verdict.String() != "held" {
		t.Fatalf("HeldUntilSent: %+v", o)
	}
	de := &schemas.DecodeError{Kind: "request", Reason: "too many tokens"}
	if r := Rejected(de).Reason(); r != "too many tokens" {
		t.Fatalf("reason %q, want the DecodeError's", r)
	}
	if r := Rejected(errors.New("odd")).Reason(); r != "malformed" {
		t.Fatalf("reason %q, want malformed", r)
	}
	// Hooks are optional (a replay gives none); set ones are called.
	Delivery{}.Settled(true)
	Delivery{}.InProgress()
	var sent, working bool
	d := Delivery{Done: func(ok bool) { sent = ok }, Working: func() { working = true }}
	d.Settled(true)
	d.InProgress()
	if !sent || !working {
		t.Fatalf("hooks not called: sent %v working %v", sent, working)
	}
}
