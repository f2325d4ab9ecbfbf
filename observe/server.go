package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrNoAddr is returned by Start when Options.Addr is empty.
var ErrNoAddr = errors.New("observe: no listen address")

// Options configure Start.
type Options struct {
	// Addr is the listen address, for example "127.0.0.1:9090"; a port of
	// 0 picks a free one (see Server.Addr). Required.
	Addr string
	// Pprof serves /debug/pprof/* (off: those paths are 404).
	Pprof bool
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Server serves /metrics, /healthz, /readyz, the /v1/ inspection API and
// optionally /debug/pprof/.
// Close it to stop serving; it then leaks no goroutine.
type Server struct {
	srv  *http.Server
	addr string
	log  *slog.Logger
	done chan struct{}

	once     sync.Once
	closeErr error
}

// Start listens on o.Addr and serves in a goroutine. It fails with
// ErrNoAddr for an empty address, or with the listen error.
//
// /metrics holds newCollector(s) plus the Go and process collectors, on a
// private registry. /healthz answers 200 "ok" while serving; /readyz 200
// when s.Ready is nil or true, otherwise 503 "catching up"; a ready
// member whose index is incomplete answers "ready; index incomplete:"
// and the reason. The /v1/
// endpoints are described in inspect.go.
func Start(o Options, s Sources) (*Server, error) {
	if o.Addr == "" {
		return nil, ErrNoAddr
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(newCollector(s)); err != nil {
		return nil, fmt.Errorf("observe: register collector: %w", err)
	}
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("observe: register go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("observe: register process collector: %w", err)
	}

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: errorLog{o.Logger},
		// One bad series must not hide all the others.
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s.Ready != nil && !s.Ready() {
			http.Error(w, "catching up", http.StatusServiceUnavailable)
			return
		}
		// An incomplete index still routes most prompts right, and a
		// member that is never ready would route none: 200, with the
		// reason for whoever reads the body.
		if s.IndexComplete != nil {
			if ok, reason := s.IndexComplete(); !ok {
				fmt.Fprintln(w, "ready; index incomplete:", reason)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	registerInspect(mux, s)
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("observe: listen %s: %w", o.Addr, err)
	}
	srv := &Server{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
		},
		addr: ln.Addr().String(),
		log:  o.Logger,
		done: make(chan struct{}),
	}
	go func() {
		defer close(srv.done)
		if err := srv.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			srv.log.Error("observe: server stopped", "addr", srv.addr, "err", err)
		}
	}()
	srv.log.Info("observe: serving", "addr", srv.addr, "pprof", o.Pprof)
	return srv, nil
}

// Addr returns the address listened on, with the port picked for ":0".
func (s *Server) Addr() string { return s.addr }

// Close stops accepting connections and waits for those in progress
// until ctx is done, then closes them. It returns once the serving
// goroutine has stopped, with ctx's error if it had to cut connections.
// Later calls return the first call's result.
func (s *Server) Close(ctx context.Context) error {
	s.once.Do(func() {
		if err := s.srv.Shutdown(ctx); err != nil {
			s.closeErr = err
			_ = s.srv.Close()
		}
		<-s.done
	})
	return s.closeErr
}

// errorLog adapts slog to promhttp's logger.
type errorLog struct{ l *slog.Logger }

func (e errorLog) Println(v ...any) { e.l.Warn("observe: metrics", "err", fmt.Sprint(v...)) }
