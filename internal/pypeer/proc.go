package pypeer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// scriptProc is a running Python peer driven line by line: one JSON
// command on its stdin, one JSON reply on its stdout; its first stdout
// line says it is ready.
type scriptProc struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	stdin  *os.File
	lines  chan []byte
	stderr *syncBuffer
}

// startScript writes script to a temporary file, runs it with args and
// returns its first stdout line (the ready line) decoded into hello.
// It is stopped at test cleanup.
func startScript(t testing.TB, name string, script []byte, hello any, args ...string) *scriptProc {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".py")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		t.Fatalf("pypeer: %v", err)
	}
	cmd := exec.Command(Python(), append([]string{path}, args...)...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &scriptProc{t: t, name: name, cmd: cmd, stdin: w, lines: make(chan []byte, 16), stderr: new(syncBuffer)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("pypeer: start %s: %v", Python(), err)
	}
	r.Close()
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			p.lines <- bytes.Clone(sc.Bytes())
		}
		close(p.lines)
	}()
	t.Cleanup(p.stop)
	if err := json.Unmarshal(p.next(), hello); err != nil {
		t.Fatalf("pypeer: %s's first line is not its ready line (%v); stderr:\n%s", name, err, p.stderr)
	}
	return p
}

func (p *scriptProc) next() []byte {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if ok {
			return l
		}
		p.t.Fatalf("pypeer: %s exited; stderr:\n%s", p.name, p.stderr)
	case <-time.After(10 * time.Second):
		p.t.Fatalf("pypeer: %s did not answer within 10s; stderr:\n%s", p.name, p.stderr)
	}
	return nil
}

// do sends one command and returns its reply, failing the test unless
// the reply says "ok".
func (p *scriptProc) do(cmd map[string]any) map[string]any {
	p.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("pypeer: %s: %v", p.name, err)
	}
	var reply map[string]any
	if err := json.Unmarshal(p.next(), &reply); err != nil || reply["ok"] != true {
		p.t.Fatalf("pypeer: %s refused %.200s: %v %v; stderr:\n%s", p.name, b, reply, err, p.stderr)
	}
	return reply
}

// stop ends the peer (closing its stdin) and waits for it.
func (p *scriptProc) stop() {
	if p.stdin == nil {
		return
	}
	p.stdin.Close()
	p.stdin = nil
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}
