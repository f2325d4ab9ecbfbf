package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
)

// TestRegisterKeepsRecordWhileEngineAPIFails: the engine's API fails
// for longer than the record's TTL (it hangs, or answers nonsense);
// Register keeps storing the last good record, so the worker, whose
// cache is intact, stays registered and keeps its index. Before, the
// refreshes were skipped and the record expired.
func TestRegisterKeepsRecordWhileEngineAPIFails(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	reg, seen := openRegistry(t, js)
	const interval = time.Second
	var failing atomic.Bool
	var stale atomic.Int32
	rec := schemas.WorkerRecord{WorkerID: 7, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:5570"}}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Register(ctx, js, func(context.Context) (schemas.WorkerRecord, error) {
			if failing.Load() {
				return schemas.WorkerRecord{}, errors.New("engine API: 500")
			}
			return rec, nil
		}, WithInterval(interval), WithKeepOnExit(true),
			WithOnRefresh(func(schemas.WorkerRecord) {
				if failing.Load() {
					stale.Add(1)
				}
			}))
	}()
	natstest.Eventually(t, 10*time.Second, func() bool { _, ok := reg.Get(7); return ok }, "worker 7 registered")
	failing.Store(true)
	// Well past the TTL (3 intervals) of the last good refresh.
	natstest.Eventually(t, 20*time.Second, func() bool { return stale.Load() >= TTLIntervals+3 }, "the last record refreshed")
	if _, gone := seen.deletedAt(7); gone {
		t.Fatal("worker 7 expired while its engine API failed and Register kept running")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRegisterViaHintstream: with WithVia, a worker stores and deletes
// its record through a registry.Writer, never touching the bucket; the
// Writer refuses a record claiming another worker's endpoint.
func TestRegisterViaHintstream(t *testing.T) {
	srv := natstest.Start(t)
	nc, js := natstest.Connect(t, srv)
	reg, seen := openRegistry(t, js)
	w, err := registry.NewWriter(nc, js, reg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wstop := context.WithCancel(context.Background())
	defer wstop()
	go func() { _ = w.Run(wctx) }()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	rec := schemas.WorkerRecord{WorkerID: 8, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:5571"}}
	go func() {
		done <- Register(ctx, js, func(context.Context) (schemas.WorkerRecord, error) { return rec, nil },
			WithInterval(time.Second), WithVia(nc, ""))
	}()
	natstest.Eventually(t, 10*time.Second, func() bool { _, ok := reg.Get(8); return ok }, "worker 8 registered through the writer")
	thief := schemas.WorkerRecord{WorkerID: 9, Model: "m", KvBlockSize: 16, HintEndpoints: rec.HintEndpoints}
	if err := registry.Ask(context.Background(), nc, "", 9, &thief, time.Minute); !errors.Is(err, registry.ErrRefused) {
		t.Fatalf("worker 9 on worker 8's endpoint: %v, want refused", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { _, ok := seen.deletedAt(8); return ok }, "worker 8 deleted at exit through the writer")
}

// TestSGLangRedirectToAnotherHostRefused: an engine API answering with
// a redirect to another host is not followed (the record would describe
// someone else); a redirect on the same host is.
func TestSGLangRedirectToAnotherHostRefused(t *testing.T) {
	_, good := startSGLang(t, sglLayout)
	var elsewhere, local *httptest.Server
	elsewhere = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, good+r.URL.Path, http.StatusFound)
	}))
	defer elsewhere.Close()
	hc := &http.Client{CheckRedirect: SameHostRedirects}
	s := &SGLang{BaseURL: elsewhere.URL, HTTP: hc, Base: schemas.WorkerRecord{WorkerID: 7, HintEndpoints: []string{"tcp://10.0.0.7:5570"}}}
	if _, err := s.Record(context.Background()); !errors.Is(err, ErrSGLang) {
		t.Fatalf("redirect to another host: %v, want refused", err)
	}
	f := &fakeSGLang{layout: sglLayout, calls: map[string]int{}}
	local = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.URL.Path) > 4 && r.URL.Path[:4] == "/old" {
			http.Redirect(w, r, r.URL.Path[4:], http.StatusMovedPermanently)
			return
		}
		f.ServeHTTP(w, r)
	}))
	defer local.Close()
	s.BaseURL = local.URL + "/old"
	if rec, err := s.Record(context.Background()); err != nil || rec.Model != "Qwen/Qwen3-8B" {
		t.Fatalf("redirect on the same host: %+v %v", rec, err)
	}
}
