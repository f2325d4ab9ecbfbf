// Package e2e runs cross-package scenarios: the hintstream binary against
// a real embedded nats-server, real ZMQ sockets and the independent Python
// wire peer.
package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
)

// binary is the hintstream command built once for the package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hintstream-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "hintstream")
	build := exec.Command("go", "build", "-o", binary, "../cmd/hintstream")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building hintstream:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running hintstream child whose output lines are kept.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  []string // stdout lines
	errs []string // stderr lines (logs)
	done chan struct{}
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv is start with extra environment variables (KEY=value).
func startEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.collect(stdout, &p.out) }()
	go func() { defer wg.Done(); p.collect(stderr, &p.errs) }()
	go func() { wg.Wait(); _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("hintstream stderr:\n%s", strings.Join(p.lines(&p.errs), "\n"))
		}
	})
	return p
}

func (p *proc) collect(r io.Reader, dst *[]string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		*dst = append(*dst, sc.Text())
		p.mu.Unlock()
	}
}

func (p *proc) lines(src *[]string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), (*src)...)
}

// waitLine waits for an output line (stdout or stderr) containing s,
// within a deadline stretched by natstest.Within.
func (p *proc) waitLine(t *testing.T, within time.Duration, s string) string {
	t.Helper()
	within = natstest.Within(within)
	deadline := time.Now().Add(within)
	for {
		for _, l := range append(p.lines(&p.errs), p.lines(&p.out)...) {
			if strings.Contains(l, s) {
				return l
			}
		}
		select {
		case <-p.done:
			t.Fatalf("hintstream exited before printing %q", s)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line containing %q within %v", s, within)
		}
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	within := natstest.Within(15 * time.Second)
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("hintstream did not stop within %v of SIGINT", within)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("hintstream exit code %d", code)
	}
}
