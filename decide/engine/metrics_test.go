package engine

import (
	"errors"
	"slices"
	"testing"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
)

// The label values metrics lists at 0 from start-up are the ones this
// package counts under.
func TestMetricsReasonsAgree(t *testing.T) {
	if index.ReasonRankOutOfRange != metrics.ReasonRankOutOfRange {
		t.Errorf("index.ReasonRankOutOfRange %q, metrics has %q", index.ReasonRankOutOfRange, metrics.ReasonRankOutOfRange)
	}
	if kvevents.ReasonWorkerMismatch != metrics.ReasonWorkerMismatch {
		t.Errorf("kvevents.ReasonWorkerMismatch %q, metrics has %q", kvevents.ReasonWorkerMismatch, metrics.ReasonWorkerMismatch)
	}
	if index.ReasonUnknownWorker != metrics.ReasonUnknownWorker {
		t.Errorf("index.ReasonUnknownWorker %q, metrics has %q", index.ReasonUnknownWorker, metrics.ReasonUnknownWorker)
	}
	m := metrics.New()
	for _, err := range []error{actions.ErrQueueFull, actions.ErrExpired, actions.ErrClosed, actions.ErrBudget, errors.New("x")} {
		for _, v := range []*metrics.CounterVec{m.HintsPrefetchDropped, m.HintsPinDropped, m.HintsRenewDropped, m.HintsReleaseDropped} {
			if r := actions.DropReason(err); !slices.Contains(v.Known(), r) {
				t.Errorf("%s: drop reason %q not among %v", v.Name(), r, v.Known())
			}
		}
	}
}
