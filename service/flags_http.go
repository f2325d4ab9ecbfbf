package service

import (
	"flag"

	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/observe"
)

// registerHTTPFlags registers the HTTP endpoint's flags (/metrics,
// /healthz, /readyz, /debug/pprof) and the bound on /metrics' tool
// labels.
func (c *Config) registerHTTPFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.HTTPAddr, "http-addr", cmdline.Env("HINTSTREAM_HTTP_ADDR", ""), "serve /metrics, /healthz and /readyz here, e.g. :9090 (env HINTSTREAM_HTTP_ADDR); empty: off")
	fs.BoolVar(&c.Pprof, "pprof", false, "also serve /debug/pprof on --http-addr")
	fs.IntVar(&c.MetricsTopTools, "metrics-top-tools", observe.DefaultTopTools, "tool label values on /metrics: the most observed tools, the rest as tool=\"other\"")
}

func (c *Config) applyHTTPFlags(*runFlags) error {
	if c.MetricsTopTools < 1 {
		return flagError("--metrics-top-tools must be at least 1, got %d", c.MetricsTopTools)
	}
	return nil
}
