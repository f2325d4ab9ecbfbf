package adapter

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves what `hintstream run --http-addr` serves, for the
// adapter: /metrics (the adapter's and its socket's counters, with the
// Go and process collectors), /healthz (200 "ok" while serving) and
// /readyz (200 "ready" while Run receives, 503 before and after).
func (a *Adapter) Handler() (http.Handler, error) {
	proc := prometheus.NewRegistry()
	if err := proc.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("adapter: register go collector: %w", err)
	}
	if err := proc.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("adapter: register process collector: %w", err)
	}
	g := prometheus.Gatherers{a.counters.Registry(), a.recv.Counters().Registry(), proc}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.running.Load() {
			http.Error(w, "not receiving", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux, nil
}
