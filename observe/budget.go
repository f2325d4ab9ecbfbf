package observe

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hintstream/hintstream/actions/zmqsend"
)

// budgetDescs export the socket budget (Sources.Budget):
//
//	hintstream_senders_open                gauge
//	hintstream_senders_max                 gauge (--max-endpoints)
//	hintstream_senders_evicted_total       counter
//	hintstream_senders_idle_closed_total   counter
type budgetDescs struct {
	open, max, evicted, idleClosed *prometheus.Desc
}

func newBudgetDescs(d func(name, help string, labels ...string) *prometheus.Desc) budgetDescs {
	return budgetDescs{
		open:       d("senders_open", "Hint senders (ZeroMQ PUSH sockets) open, the pin endpoint's included."),
		max:        d("senders_max", "The socket budget, --max-endpoints (the pin endpoint's sender aside)."),
		evicted:    d("senders_evicted_total", "Idle senders closed to make room for a new endpoint in a full budget."),
		idleClosed: d("senders_idle_closed_total", "Senders closed after --sender-idle-close without hints."),
	}
}

func (b budgetDescs) collect(ch chan<- prometheus.Metric, st zmqsend.BudgetStats) {
	emit(ch, b.open, prometheus.GaugeValue, float64(st.Open))
	emit(ch, b.max, prometheus.GaugeValue, float64(st.Max))
	emit(ch, b.evicted, prometheus.CounterValue, float64(st.Evicted))
	emit(ch, b.idleClosed, prometheus.CounterValue, float64(st.IdleClosed))
}
