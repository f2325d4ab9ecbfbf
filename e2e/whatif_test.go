package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// whatif runs the binary's whatif to its end, stdout and stderr pipes.
func whatif(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"whatif"}, args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// traceHead writes the synthetic trace's first n lines, with extra lines
// inserted before line at (1-based), to a file.
func traceHead(t *testing.T, n, at int, extra ...string) string {
	t.Helper()
	f, err := os.Open(testvectors.TracePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for i := 1; i <= n && sc.Scan(); i++ {
		if i == at {
			for _, l := range extra {
				b.WriteString(l + "\n")
			}
		}
		b.WriteString(sc.Text() + "\n")
	}
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The binary reads a trace and writes JSON and an HTML report; on a pipe
// it draws no progress bar.
func TestWhatifTrace(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := whatif(t, "--trace", traceHead(t, 400, 0), "--json", "--report", dir, "--device-blocks", "256")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if errOut != "" {
		t.Fatalf("stderr on a pipe: %q", errOut)
	}
	var rep struct {
		Requests int `json:"requests"`
		Points   []struct {
			Runs []struct {
				Name   string  `json:"name"`
				Kind   string  `json:"kind"`
				Saving float64 `json:"saving"`
			} `json:"runs"`
		} `json:"points"`
		Cluster struct {
			DeviceBlocks int `json:"device_blocks_per_worker"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Requests != 400 || len(rep.Points) != 1 || len(rep.Points[0].Runs) != 16 || rep.Cluster.DeviceBlocks != 256 {
		t.Fatalf("report: %+v", rep)
	}
	runs := rep.Points[0].Runs
	// off, 12 policies and peers, the oracle, then both bounds.
	peers := 0
	for _, r := range runs {
		if r.Kind == "peer" {
			peers++
		}
	}
	bound, reach := runs[len(runs)-2], runs[len(runs)-1]
	if runs[0].Kind != "off" || bound.Kind != "bound" || reach.Kind != "reachable" || peers != 4 ||
		bound.Saving < runs[1].Saving || bound.Saving < reach.Saving {
		t.Fatalf("runs: %+v", runs)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil || bytes.Count(page, []byte("<svg ")) < 2 || !bytes.Contains(page, []byte("<table")) {
		t.Fatalf("report page (%v): %d charts", err, bytes.Count(page, []byte("<svg ")))
	}
	// The terminal table with a sweep.
	out, errOut, code = whatif(t, "--trace", traceHead(t, 200, 0), "--sweep", "device=128,512")
	if code != 0 || !strings.Contains(out, "prefill saved against device blocks per worker") || !strings.Contains(out, "today's") {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
}

// A bad line stops the run naming it (exit 1); --skip-bad counts it and
// goes on; a command line without a source is a usage error (exit 2).
func TestWhatifBadInput(t *testing.T) {
	bad := traceHead(t, 50, 3, `{"timestamp": 100, "input_length": 10, "output_length": 1, "hash_ids": []}`)
	_, errOut, code := whatif(t, "--trace", bad)
	if code != 1 || !strings.Contains(errOut, "trace line 3: empty hash_ids") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out, errOut, code := whatif(t, "--trace", bad, "--skip-bad", "--json")
	if code != 0 || !strings.Contains(out, `"skipped_bad": 1`) || !strings.Contains(out, `"requests": 50`) {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	if _, errOut, code = whatif(t); code != 2 || !strings.Contains(errOut, "--trace FILE, --workload NAME or --from-streams") {
		t.Fatalf("no source: exit %d: %s", code, errOut)
	}
	if _, errOut, code = whatif(t, "--trace", bad, "--alpha", "3"); code != 2 || !strings.Contains(errOut, "alpha") {
		t.Fatalf("alpha 3: exit %d: %s", code, errOut)
	}
}

// --from-streams on a window with no requests says so (exit 1), and
// leaves the streams as they were.
func TestWhatifEmptyStreamWindow(t *testing.T) {
	srv, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:5599"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, streams.ResponseSubject("m"), []byte(`{"request_id": "old"}`)); err != nil {
		t.Fatal(err)
	}
	before, err := js.Stream(ctx, streams.DefaultSet().Responses.Name)
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code := whatif(t, "--from-streams", "--nats-url", srv.ClientURL(), "--since", "1h")
	if code != 1 || !strings.Contains(errOut, "no requests in the stream window") || !strings.Contains(errOut, "1 responses") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	info, err := before.Info(ctx)
	if err != nil || info.State.Msgs != 1 || info.State.LastSeq != 1 {
		t.Fatalf("responses stream after whatif: %+v, %v", info.State, err)
	}
	// The KV lookback is checked before anything is read.
	if _, errOut, code := whatif(t, "--from-streams", "--nats-url", srv.ClientURL(), "--since", "1h", "--kv-lookback", "-1m"); code != 2 ||
		!strings.Contains(errOut, "--kv-lookback -1m0s: negative") {
		t.Fatalf("a negative --kv-lookback: exit %d: %s", code, errOut)
	}
}
