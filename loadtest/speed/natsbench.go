package speed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchResult is one `nats bench js ordered` run.
type BenchResult struct {
	Msgs        int
	Size        int // bytes per message, as given to --size
	MsgsPerSec  float64
	BytesPerSec float64
	Duration    time.Duration // first to last message, as natscli times it
	// CPUPerMsg is the nats process's whole CPU time (user+system, start-up
	// included, so slightly high) per message.
	CPUPerMsg time.Duration
	Command   string // the command line run
	Output    string // its report
}

// BenchOption configures NatsBench.
type BenchOption func(*benchOpts)

type benchOpts struct {
	stream, cli string
}

// WithStream reads an existing stream holding at least msgs messages,
// instead of filling (and afterwards deleting) a stream of its own.
func WithStream(name string) BenchOption { return func(o *benchOpts) { o.stream = name } }

// WithNatsCLI names the `nats` program; default <repo>/bin/nats, then
// `nats` on PATH.
func WithNatsCLI(path string) BenchOption { return func(o *benchOpts) { o.cli = path } }

// BenchStream is the stream NatsBench fills without WithStream.
const BenchStream = "LOADTEST_BENCH"

// NatsBench runs `nats bench js ordered` (natscli NatsCLIVersion) against
// url: one ephemeral ordered consumer reading msgs messages of size bytes
// from a stream it first fills, and returns its rate (msgs over natscli's
// own first-to-last-message time).
func NatsBench(ctx context.Context, url string, msgs, size int, opts ...BenchOption) (BenchResult, error) {
	if msgs <= 0 || size <= 0 {
		return BenchResult{}, fmt.Errorf("%w: msgs and size must be positive", ErrConfig)
	}
	var o benchOpts
	for _, f := range opts {
		f(&o)
	}
	if o.cli == "" {
		o.cli = "nats"
		if root, err := RepoRoot(); err == nil {
			if p := filepath.Join(root, "bin", "nats"); fileExists(p) {
				o.cli = p
			}
		}
	}
	if o.stream == "" {
		o.stream = BenchStream
		if err := fillBenchStream(ctx, url, msgs, size); err != nil {
			return BenchResult{}, err
		}
		defer func() {
			if nc, err := nats.Connect(url); err == nil {
				if js, err := jetstream.New(nc); err == nil {
					_ = js.DeleteStream(context.Background(), BenchStream)
				}
				nc.Close()
			}
		}()
	}
	dir, err := os.MkdirTemp("", "natsbench-")
	if err != nil {
		return BenchResult{}, err
	}
	defer os.RemoveAll(dir)
	csvPath := filepath.Join(dir, "bench.csv")
	args := []string{"--server", url, "--no-context", "bench", "js", "ordered", "--stream", o.stream,
		"--msgs", strconv.Itoa(msgs), "--size", strconv.Itoa(size), "--no-progress", "--csv", csvPath}
	cmd := exec.CommandContext(ctx, o.cli, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	res := BenchResult{Msgs: msgs, Size: size, Command: "nats " + strings.Join(args[:len(args)-2], " ")}
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("speed: %s: %v\n%s", res.Command, err, out.String())
	}
	res.Output = strings.TrimSpace(out.String())
	if ps := cmd.ProcessState; ps != nil {
		res.CPUPerMsg = (ps.UserTime() + ps.SystemTime()) / time.Duration(msgs)
	}
	f, err := os.ReadFile(csvPath)
	if err != nil {
		return res, err
	}
	rows, err := csv.NewReader(bytes.NewReader(f)).ReadAll()
	if err != nil || len(rows) < 2 {
		return res, fmt.Errorf("speed: nats bench CSV unreadable (%v):\n%s", err, f)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	di, ok := col["DurationSecs"]
	if !ok || di >= len(rows[1]) {
		return res, fmt.Errorf("speed: nats bench CSV has no DurationSecs:\n%s", f)
	}
	secs, err := strconv.ParseFloat(rows[1][di], 64)
	if err != nil || secs <= 0 {
		return res, fmt.Errorf("speed: nats bench CSV duration %q", rows[1][di])
	}
	res.Duration = time.Duration(secs * float64(time.Second))
	res.MsgsPerSec = float64(msgs) / secs
	res.BytesPerSec = res.MsgsPerSec * float64(size)
	return res, nil
}

func fillBenchStream(ctx context.Context, url string, msgs, size int) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_ = js.DeleteStream(ctx, BenchStream)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: BenchStream, Subjects: []string{"loadtest.bench"},
		Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	payload := make([]byte, size)
	_, _ = rand.Read(payload)
	for i := 0; i < msgs; i++ {
		if _, err := js.PublishAsync("loadtest.bench", payload); err != nil {
			return err
		}
		if i%2048 == 2047 {
			if err := waitPublished(ctx, js); err != nil {
				return err
			}
		}
	}
	return waitPublished(ctx, js)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
