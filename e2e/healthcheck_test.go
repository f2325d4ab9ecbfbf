package e2e

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
)

// healthcheck runs `hintstream healthcheck args...` (the image's
// HEALTHCHECK and compose's) and returns its combined output and exit code.
func healthcheck(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"healthcheck"}, args...)...)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestHealthcheck: exit 0 once a running instance's /readyz answers 200,
// found through HINTSTREAM_HTTP_ADDR as in the container; exit 1 when
// nothing listens, or on a 503 (a member still catching up).
func TestHealthcheck(t *testing.T) {
	srv := natstest.Start(t)
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--http-addr", "127.0.0.1:0", "--log-format", "json")
	addr := httpAddr(t, p)
	port := addr[strings.LastIndex(addr, ":"):]

	deadline := time.Now().Add(natstest.Within(30 * time.Second))
	for {
		out, code := healthcheck(t, []string{"HINTSTREAM_HTTP_ADDR=" + port})
		if code == 0 {
			if !strings.Contains(out, "/readyz: ready") {
				t.Fatalf("healthy answer %q", out)
			}
			break
		}
		if !strings.Contains(out, "unhealthy") {
			t.Fatalf("exit %d without saying why: %q", code, out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready in time: %s", out)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a condition with a deadline
	}
	if out, code := healthcheck(t, nil, "--addr", "http://"+addr, "--path", "/healthz"); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("/healthz: exit %d: %s", code, out)
	}

	catchingUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "catching up", http.StatusServiceUnavailable)
	}))
	defer catchingUp.Close()
	if out, code := healthcheck(t, nil, "--addr", catchingUp.URL); code != 1 || !strings.Contains(out, "503") || !strings.Contains(out, "catching up") {
		t.Fatalf("503: exit %d: %s", code, out)
	}

	p.stop(t)
	if out, code := healthcheck(t, nil, "--addr", addr, "--timeout", "2s"); code != 1 || !strings.Contains(out, "unhealthy") {
		t.Fatalf("nothing listening: exit %d: %s", code, out)
	}
	// A bad flag is a usage error (exit 2), as on every command.
	if _, code := healthcheck(t, nil, "--path", "readyz"); code != 2 {
		t.Fatalf("a path without /: exit %d, want 2", code)
	}
}
