package speed

import (
	"bytes"
	"context"
	"github.com/hintstream/hintstream/internal/longtest"
	"path/filepath"
	"strings"
	"testing"
)

func TestIngestSmallWithNatsBench(t *testing.T) {
	longtest.Require(t, "builds the nats CLI from source on a fresh machine")
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := EnsureNatsCLI(context.Background(), filepath.Join(root, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	var prog bytes.Buffer
	res, err := Ingest(context.Background(), IngestConfig{Binary: bins.Hintstream, Events: 2000, NatsCLI: cli,
		Progress: &prog})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events (%d B each) in %v: %.0f events/s, %.1f MB/s; nats bench %.0f msgs/s",
		res.Events, res.MeanSize, res.Duration, res.EventsPerSec, res.MBPerSec, res.BenchMsgsPerSec())
	if res.Applied != 2000 {
		t.Fatalf("applied %d, want 2000", res.Applied)
	}
	if res.MeanSize < 200 || res.MeanSize > 600 || res.Bytes != 0 && res.Bytes/2000 > 600 {
		t.Fatalf("mean event size %d B, want a 4-block RouterEvent's (~370)", res.MeanSize)
	}
	if len(res.Bench) != 2 || res.Bench[0].MsgsPerSec <= 0 || res.Bench[1].MsgsPerSec <= 0 {
		t.Fatalf("bench runs %+v", res.Bench)
	}
	if !strings.Contains(res.Bench[0].Output, "msgs/sec") || !strings.Contains(res.Bench[0].Command, "bench js ordered") {
		t.Fatalf("bench output %q, command %q", res.Bench[0].Output, res.Bench[0].Command)
	}
	if !strings.Contains(prog.String(), "nats bench js ordered") {
		t.Fatalf("progress %q", prog.String())
	}
}

func TestNatsBenchOwnStream(t *testing.T) {
	longtest.Require(t, "builds the nats CLI from source on a fresh machine")
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := EnsureNatsCLI(context.Background(), filepath.Join(root, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	res, err := NatsBench(context.Background(), srv.URL(), 5000, 128, WithNatsCLI(cli))
	if err != nil {
		t.Fatal(err)
	}
	if res.MsgsPerSec <= 0 || res.Duration <= 0 || res.Msgs != 5000 || res.Size != 128 {
		t.Fatalf("%+v", res)
	}
	if _, err := NatsBench(context.Background(), srv.URL(), 0, 128); err == nil {
		t.Fatal("0 messages accepted")
	}
}

func TestIngestEngineBatches(t *testing.T) {
	res, err := Ingest(context.Background(), IngestConfig{Binary: bins.Hintstream, Events: 1000, EngineBatches: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied != 1000 || res.MeanSize < 200 || res.MeanSize > 600 {
		t.Fatalf("applied %d of 1000 engine batches of %d B", res.Applied, res.MeanSize)
	}
}

// Rounds fill the stream once and give each round its own bench and
// apply, every one of them complete; Also applies a second program in
// every round.
func TestIngestRounds(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := EnsureNatsCLI(context.Background(), filepath.Join(root, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	// Enough events for several apply batches per round; the full-size
	// ingestion figures come from `make loadtest`, not from this test.
	const events = 7000
	res, err := Ingest(context.Background(), IngestConfig{Binary: bins.Hintstream, Also: bins.Hintstream, Events: events,
		NatsCLI: cli, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rounds) != 2 || len(res.Bench) != 2 || res.Applied != events {
		t.Fatalf("%d rounds, %d bench runs, applied %d", len(res.Rounds), len(res.Bench), res.Applied)
	}
	for i, r := range res.Rounds {
		if r.Bench.MsgsPerSec <= 0 || r.Share() <= 0 || r.Also.EventsPerSec <= 0 {
			t.Fatalf("round %d: %+v", i+1, r)
		}
	}
}
