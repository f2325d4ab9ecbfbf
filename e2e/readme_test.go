package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
)

// TestReadmeCommands replays the README's `nats` CLI commands (through
// nats.go, with the peer's endpoint in place of 5570) against the binary,
// so the documented way to make a hint appear keeps working.
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	kvPut := regexp.MustCompile(`^nats kv put (\S+) (\S+) '(.*)'$`)
	pub := regexp.MustCompile(`^nats pub '?([^' ]+)'? '(.*)'$`)
	var cmds [][]string
	for _, l := range strings.Split(string(readme), "\n") {
		if m := kvPut.FindStringSubmatch(l); m != nil {
			cmds = append(cmds, m)
		} else if m := pub.FindStringSubmatch(l); m != nil {
			cmds = append(cmds, m)
		}
	}
	if len(cmds) < 3 {
		t.Fatalf("README shows %d nats commands, want the registry entry, a KV event and a wake-up", len(cmds))
	}

	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	sink := pypeer.StartSink(t, 1)
	p := start(t, "run", "--nats-url", srv.ClientURL())
	p.waitLine(t, 30*time.Second, "hintstream running")
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(20*time.Second))
	defer cancel()
	for _, c := range cmds {
		if strings.HasPrefix(c[0], "nats kv put") {
			kv, err := js.KeyValue(ctx, c[1])
			if err != nil {
				t.Fatal(err)
			}
			val := strings.ReplaceAll(c[3], "tcp://127.0.0.1:5570", sink.Endpoints()[0])
			if _, err := kv.Put(ctx, c[2], []byte(val)); err != nil {
				t.Fatal(err)
			}
			// The worker must be known before the wake-up is chosen.
			p.waitLine(t, 5*time.Second, "worker joined")
			continue
		}
		if _, err := js.Publish(ctx, c[1], []byte(c[2])); err != nil {
			t.Fatalf("%s: %v", c[0], err)
		}
	}
	sink.WaitFor(t, 5*time.Second, hasRequest("req-1"), "the README's wake-up req-1")
	if m := byRequest(sink.Messages(), "req-1")[0]; !m.OK {
		t.Fatalf("peer rejected the README's hint: %s", m.Error)
	}
}

// TestReadmeListsEveryPackage holds the README's package table to the
// tree: every directory with Go code is a row, or lies below a row that
// says "and below", so a newcomer's map has no blank spots.
func TestReadmeListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	below := map[string]bool{}
	row := regexp.MustCompile("`([a-z0-9_/]+)/`")
	for _, l := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		first := strings.SplitN(l, "|", 3)[1]
		for _, m := range row.FindAllStringSubmatch(first, -1) {
			listed[m[1]] = true
			if strings.Contains(first, "and below") {
				below[m[1]] = true
			}
		}
	}
	err = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, "../"))
		if d.IsDir() {
			// A separate Go module (the chart's tests) and hidden folders
			// are not packages of this module.
			if strings.HasPrefix(d.Name(), ".") && p != ".." || rel == "deploy/helm/charttest" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		for a := dir; a != "."; a = filepath.ToSlash(filepath.Dir(a)) {
			if listed[a] && (a == dir || below[a]) {
				return nil
			}
		}
		t.Errorf("package %s/ is not in the README's package table", dir)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
