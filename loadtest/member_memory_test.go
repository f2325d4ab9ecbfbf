package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/loadtest/speed"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/streams"
)

// BenchmarkMemberMemory measures one member's memory (the real binary)
// holding N indexed (block, worker) device entries, for each N in
// HINTSTREAM_MEMBER_ENTRIES (default "0,1000000"; the scaling figures use
// "0,1000000,10000000"). The index is built in-process over 64 workers
// (every block held by one worker: the dearest case), saved as a snapshot
// and loaded by the child, which is then asked to collect garbage
// (/debug/pprof/heap?gc=1) before its live heap and resident set are read
// from /metrics. N=0 is the baseline of the same run.
//
//	HINTSTREAM_MEMBER_ENTRIES=0,1000000,10000000 go test -run '^$' -bench MemberMemory -benchtime 1x -timeout 30m ./loadtest/
func BenchmarkMemberMemory(b *testing.B) {
	sizes := []int{0, 1_000_000}
	if v := os.Getenv("HINTSTREAM_MEMBER_ENTRIES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	ctx := context.Background()
	bins, err := speed.Build(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			for b.Loop() {
				heap, rss := memberMemory(b, bins.Hintstream, n)
				b.ReportMetric(float64(heap)/1e6, "heap-MB")
				b.ReportMetric(float64(rss)/1e6, "rss-MB")
				if n > 0 {
					b.ReportMetric(float64(heap)/float64(n), "heap-B/entry")
				}
			}
		})
	}
}

// memberMemory saves a snapshot of n entries and returns the live heap and
// resident set of a member that loaded it.
func memberMemory(b *testing.B, bin string, n int) (heap, rss int64) {
	srv := natstest.Start(b)
	_, js := natstest.Connect(b, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		b.Fatal(err)
	}
	// One real KV event, so the snapshot covers a stream sequence.
	ev, _ := json.Marshal(schemas.RouterEvent{WorkerID: 1 << 20, Event: schemas.KvCacheEvent{EventID: 1,
		Data: schemas.KvCacheEventData{Kind: schemas.KindCleared}}})
	if _, err := js.Publish(ctx, streams.KVEventSubject(1<<20), ev); err != nil {
		b.Fatal(err)
	}
	svc := service.New(service.Config{NATSURL: srv.ClientURL(), SnapshotInterval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	fillIndex(b, svc.Index, n)
	svc.Stop(ctx) // saves the snapshot
	if svc.Counters.SnapshotsSaved.Value() != 1 {
		b.Fatal("no snapshot saved")
	}
	svc = nil

	port := freePort(b)
	cmd := exec.Command(bin, "run", "--nats-url", srv.ClientURL(), "--snapshot-interval", "1h",
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", port), "--pprof", "--log-format", "json",
		"--data-dir", filepath.Join(b.TempDir(), "unused"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	running, snapLines := make(chan string, 1), make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			switch l := sc.Text(); {
			case strings.Contains(l, "hintstream running"):
				running <- l
			case strings.Contains(l, "snapshot"):
				select {
				case snapLines <- l:
				default:
				}
			}
		}
	}()
	var line string
	select {
	case line = <-running:
	case <-time.After(10 * time.Minute):
		b.Fatal("member not running within 10 minutes")
	}
	var rec struct {
		Blocks int `json:"index_blocks"`
	}
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Blocks != n {
		var why []string
		for len(snapLines) > 0 {
			why = append(why, <-snapLines)
		}
		b.Fatalf("member indexes %d blocks, want %d (%v); its snapshot lines: %q", rec.Blocks, n, err, why)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for range 2 { // collect the snapshot's garbage, twice for finalizers
		resp, err := http.Get(base + "/debug/pprof/heap?gc=1")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	m := metricsOf(b, base+"/metrics")
	return int64(m["go_memstats_heap_alloc_bytes"]), int64(m["process_resident_memory_bytes"])
}

// fillIndex stores n device entries: 64 workers, chains of 1,024 blocks,
// 64 blocks an event, no block shared between workers.
func fillIndex(b *testing.B, ix *index.Memory, n int) {
	const workers, chain, per = 64, 1024, 64
	perWorker := n / workers
	for w := range workers {
		key := kvevents.WorkerKey{WorkerID: uint64(w + 1)}
		var parent uint64
		for next := 0; next < perWorker+boolInt(w < n%workers); {
			ev := kvevents.Event{Worker: key, Kind: schemas.KindStored}
			if next%chain != 0 {
				p := parent
				ev.ParentHash = &p
			}
			for k := 0; k < per && next < perWorker+boolInt(w < n%workers); k++ {
				ext := uint64(w+1)<<40 | uint64(next)
				ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: ext, LocalHash: ext * 0x9E3779B97F4A7C15})
				parent = ext
				next++
				if next%chain == 0 {
					break
				}
			}
			if err := ix.Apply(ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	if got := ix.Stats().DeviceBlocks; got != int64(n) {
		b.Fatalf("index holds %d entries, want %d", got, n)
	}
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// metricsOf reads unlabelled samples from a Prometheus text endpoint.
func metricsOf(b *testing.B, url string) map[string]float64 {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out
}
