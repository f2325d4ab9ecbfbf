// Package standin holds stand-ins for the HTTP APIs hintstream adapter
// calls, each written from its upstream source, for tests and the demo
// (no GPU can run the real engines here): engine_standin.py for SGLang's
// and vLLM's (see the script's docstring for the files and commits; it
// needs /usr/bin/python3, standard library only), and, in Go on
// net/http/httptest, the Dynamo frontend's OpenAI endpoints (Dynamo) and
// LMCache's /l2/prefetch (LMCache) and its controller's /pin
// (LMCacheController, lmcache_controller.go).
package standin

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

//go:embed engine_standin.py
var script []byte

// Script is the stand-in's source, for a caller that runs it itself.
func Script() []byte { return script }

// Python is the interpreter the stand-in runs with.
const Python = "/usr/bin/python3"

// Accepted is one request the stand-in accepted: its JSON body and the
// top-level fields the engine would have ignored.
type Accepted struct {
	Body    map[string]any `json:"body"`
	Ignored []string       `json:"ignored"`
}

// Rejected is one request the stand-in refused, with the status it
// answered and why.
type Rejected struct {
	Status int    `json:"status"`
	Error  string `json:"error"`
}

// Stats is what GET /_standin/stats returns.
type Stats struct {
	Accepted    []Accepted `json:"accepted"`
	Rejected    []Rejected `json:"rejected"`
	MaxInflight int        `json:"max_inflight"`
}

// Engine is a running stand-in.
type Engine struct {
	URL  string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	done chan struct{}
}

// Start writes the script into dir and runs it with args (e.g. "--engine",
// "vllm", "--delay-ms", "200") on a free loopback port, waiting until it
// listens or ctx ends. Stop it with Stop.
func Start(ctx context.Context, dir string, args ...string) (*Engine, error) {
	path := filepath.Join(dir, "engine_standin.py")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		return nil, fmt.Errorf("standin: %w", err)
	}
	cmd := exec.Command(Python, append([]string{path, "--port", "0"}, args...)...)
	// Its stderr goes nowhere and it dies with its parent: a stand-in left
	// behind by a killed parent must not hold the parent's output pipes
	// open (a test waiting for their EOF would hang).
	cmd.Stderr = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("standin: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("standin: start %s: %w", Python, err)
	}
	e := &Engine{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		defer close(e.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), " listening on "); ok {
				select {
				case urls <- u:
				default:
				}
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case e.URL = <-urls:
		return e, nil
	case <-e.done:
		return nil, errors.New("standin: exited before listening")
	case <-ctx.Done():
		e.Stop()
		return nil, fmt.Errorf("standin: not listening: %w", ctx.Err())
	}
}

// Stop kills the stand-in and waits for it.
func (e *Engine) Stop() {
	if e.cmd.Process != nil {
		_ = e.cmd.Process.Kill()
	}
	<-e.done
}

// Stats asks the stand-in what it has seen.
func (e *Engine) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+"/_standin/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// Timeout is how long Start is given by callers that have no better
// bound: an interpreter start on a loaded machine.
const Timeout = 20 * time.Second
