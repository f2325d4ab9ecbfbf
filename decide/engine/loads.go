package engine

import (
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// DecodeLoad decodes a message of the load stream: a load report (a
// report without a worker id takes the one in its subject), or an
// event-plane kv_metrics frame (namespace.….kv_metrics), which carries
// its worker id inside.
func DecodeLoad(lim schemas.Limits, m Message) (*schemas.ActiveLoad, error) {
	if err := lim.CheckHeaders("load", m.Header); err != nil {
		return nil, err
	}
	if eventplane.IsLoadSubject(m.Subject) { // Dynamo's event plane
		_, l, err := eventplane.DecodeLoad(m.Data, lim)
		return l, err
	}
	l, err := lim.DecodeLoad(m.Data, m.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if l.WorkerID == 0 {
		if id, err := streams.WorkerFromSubject(m.Subject); err == nil {
			l.WorkerID = id
		}
	}
	if err := kvevents.CheckSubjectWorker("load", m.Subject, l.WorkerID); err != nil {
		return nil, err
	}
	return l, nil
}

// Load decodes one load message (DecodeLoad) and applies it (ApplyLoad).
func (e *Engine) Load(m Message) error {
	l, err := DecodeLoad(e.d.Limits, m)
	if err != nil {
		return err
	}
	return e.ApplyLoad(l)
}

// ApplyLoad records a worker's decoded load for the worker choice.
//
// Only a registered worker's dp ranks are kept (when the engine has the
// holding area, EngineDeps.Holding, which knows them): 65,546 reports for an
// unregistered kv.load.999 once filled the table, and real workers'
// reports were refused. Others are counted in load.refused, not
// dead-lettered: a worker may report load before its record is written,
// and its next report (they are periodic) is kept.
func (e *Engine) ApplyLoad(l *schemas.ActiveLoad) error {
	if e.holding != nil {
		if ok, reason := e.holding.Admits(kvevents.WorkerKey{WorkerID: l.WorkerID, DpRank: l.DpRank}); !ok {
			e.counters.LoadRefused.Inc(reason)
			return nil
		}
	}
	if err := e.loads.Update(*l); err != nil {
		// Counted and dead-lettered like a malformed report: it is
		// dropped, and whoever floods kv.load.> should be found.
		return &schemas.DecodeError{Kind: "load", Reason: "too many workers reporting load", Err: err}
	}
	return nil
}
