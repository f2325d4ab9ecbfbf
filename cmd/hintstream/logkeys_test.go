package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/observe/metrics"
)

// logKeyRenames are keys the code once used for what the project's keys
// name (STYLE: worker_id, dp_rank, endpoint; errors under "err").
var logKeyRenames = map[string]string{
	"worker": "worker_id", "workerid": "worker_id", "worker-id": "worker_id", "workerID": "worker_id",
	"rank": "dp_rank", "dp": "dp_rank", "dprank": "dp_rank", "dpRank": "dp_rank",
	"ep": "endpoint", "error": "err",
}

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// logMethods are the slog.Logger methods whose arguments after the
// message (after ctx and level for Log) are key/value pairs or Attrs.
var logMethods = map[string]int{ // name → index of the first key
	"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
	"Log": 3, "With": 0,
}

// slogAttrs are the slog functions whose first argument is a key.
var slogAttrs = map[string]bool{"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
	"Bool": true, "Duration": true, "Time": true, "Any": true, "Group": true}

// isLogger reports whether x looks like a *slog.Logger (log, logger, l,
// opts.Logger, p.Log, ...): names are all the scan has, without types.
func isLogger(x ast.Expr) bool {
	var name string
	switch v := x.(type) {
	case *ast.Ident:
		name = v.Name
	case *ast.SelectorExpr:
		name = v.Sel.Name
	default:
		return false
	}
	n := strings.ToLower(name)
	return n == "log" || n == "l" || n == "slog" || strings.HasSuffix(n, "logger")
}

// TestLogCallsUseProjectKeys scans every non-test Go file of the module
// for slog calls whose literal keys are not snake_case or are the old
// names of the project keys, and for %+v / %#v struct dumps in their
// arguments. Durations need no scan: newLogger prints every
// time.Duration as a string (TestLoggerDurationsAreStrings).
func TestLogCallsUseProjectKeys(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	var bad []string
	report := func(n ast.Node, format string, a ...any) {
		bad = append(bad, fset.Position(n.Pos()).String()+": "+fmt.Sprintf(format, a...))
	}
	checkKey := func(lit *ast.BasicLit) {
		key, err := strconv.Unquote(lit.Value)
		if err != nil {
			return
		}
		if want, ok := logKeyRenames[key]; ok {
			report(lit, "log key %q: use %q", key, want)
		} else if !snakeKey.MatchString(key) {
			report(lit, "log key %q is not snake_case", key)
		}
	}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_gen.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "slog" && slogAttrs[sel.Sel.Name] && len(call.Args) > 0 {
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					checkKey(lit)
				}
				return true
			}
			first, ok := logMethods[sel.Sel.Name]
			if !ok || !isLogger(sel.X) || len(call.Args) < first {
				return true
			}
			for _, a := range call.Args {
				ast.Inspect(a, func(n ast.Node) bool {
					if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING &&
						(strings.Contains(lit.Value, "%+v") || strings.Contains(lit.Value, "%#v")) {
						report(lit, "struct dump %s in a log call: log fields as keys", lit.Value)
					}
					return true
				})
			}
			for i := first; i < len(call.Args); i++ {
				lit, ok := call.Args[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue // an Attr, or a key held in a variable
				}
				checkKey(lit)
				i++ // its value
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("scanned only %d files under %s", files, root)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestLoggerDurationsAreStrings: both log formats print a time.Duration,
// top-level or in a group, as "1.5s", not 1500000000.
func TestLoggerDurationsAreStrings(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		log, err := newLogger(&buf, format, "info")
		if err != nil {
			t.Fatal(err)
		}
		log.Info("x", "took", 1500*time.Millisecond, slog.Group("g", slog.Duration("wait", 250*time.Millisecond)))
		out := buf.String()
		if !strings.Contains(out, "1.5s") || !strings.Contains(out, "250ms") || strings.Contains(out, "1500000000") {
			t.Errorf("%s: %s", format, out)
		}
	}
}

// TestStoppedSummary: run's "stopped" line nests counters and per-endpoint
// sender stats as JSON objects with snake_case keys (the counters' exposed
// names, a labelled family by label value) and duration strings; the text
// format prints dotted paths of those keys, not a Go map or struct dump.
func TestStoppedSummary(t *testing.T) {
	m := metrics.New()
	for range 5 {
		m.RequestsReceived.Inc()
	}
	m.HintsPrefetchSkipped.Inc("no_worker")
	eps := map[string]zmqsend.EndpointStats{"tcp://127.0.0.1:5570": {Sent: 4, Retried: 1, Dropped: map[string]uint64{"queue_full": 2},
		QueueDepth: 3, LatencyCount: 4, LatencySum: 6 * time.Millisecond, LatencyMax: 3 * time.Millisecond}}
	var buf bytes.Buffer
	log, _ := newLogger(&buf, "json", "info")
	log.Info("stopped", stoppedAttrs(m.LogAttrs(), eps)...)
	var rec struct {
		Counters  map[string]any            `json:"counters"`
		Endpoints map[string]map[string]any `json:"endpoints"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	ep := rec.Endpoints["tcp://127.0.0.1:5570"]
	skipped, _ := rec.Counters["hints_prefetch_skipped_total"].(map[string]any)
	if rec.Counters["requests_received_total"] != 5.0 || skipped["no_worker"] != 1.0 || len(rec.Counters) != 2 ||
		ep["sent"] != 4.0 || ep["queue_depth"] != 3.0 ||
		ep["latency_mean"] != "1.5ms" || ep["latency_max"] != "3ms" || ep["dropped"].(map[string]any)["queue_full"] != 2.0 {
		t.Fatalf("stopped line: %s", buf.String())
	}
	buf.Reset()
	log, _ = newLogger(&buf, "text", "info")
	log.Info("stopped", stoppedAttrs(m.LogAttrs(), eps)...)
	if out := buf.String(); !strings.Contains(out, "endpoints.tcp://127.0.0.1:5570.sent=4") ||
		!strings.Contains(out, "counters.requests_received_total=5") ||
		!strings.Contains(out, "counters.hints_prefetch_skipped_total.no_worker=1") ||
		strings.Contains(out, "map[") || strings.Contains(out, "{") {
		t.Fatalf("text stopped line: %s", out)
	}
}
