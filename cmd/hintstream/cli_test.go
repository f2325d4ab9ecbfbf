package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
)

// commands is every subcommand realMain knows.
var commands = []string{"run", "replay", "bridge", "demo", "streams", "inspect", "register", "sink", "healthcheck", "version"}

func call(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestHelpGoesToStdout: --help, -h and "help CMD" print the command's
// usage to stdout, nothing to stderr, and exit 0, for every command.
func TestHelpGoesToStdout(t *testing.T) {
	for _, cmd := range commands {
		for _, args := range [][]string{{cmd, "--help"}, {cmd, "-h"}, {"help", cmd}} {
			code, out, errOut := call(args...)
			if code != 0 || !strings.HasPrefix(out, "Usage: hintstream "+cmd) || errOut != "" {
				t.Errorf("%q: exit %d, stdout %.80q, stderr %q", args, code, out, errOut)
			}
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		if code, out, errOut := call(args...); code != 0 || !strings.Contains(out, "hintstream run [flags]") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %.80q, stderr %q", args, code, out, errOut)
		}
	}
	// inspect's subcommands have their own flags and help.
	if code, out, _ := call("inspect", "overlap", "--help"); code != 0 || !strings.Contains(out, "-tokens") {
		t.Errorf("inspect overlap --help: exit %d\n%s", code, out)
	}
}

// TestUsageErrorsExit2: an unknown flag, a value that does not parse, a
// value out of range, a missing required flag, a stray argument and an
// unknown command or action all exit 2 with a message on stderr naming
// the problem, and nothing on stdout.
func TestUsageErrorsExit2(t *testing.T) {
	cases := [][]string{
		{}, {"frobnicate"}, {"help", "frobnicate"}, {"help", "run", "extra"},
		{"version", "extra"},
		{"run", "--check-config", "--overlap-jump", "0"},
		{"run", "--check-config", "--log-level", "loud"},
		{"run", "--check-config", "stray"},
		{"replay"}, // neither --since nor --from-seq
		{"replay", "--from-seq", "1", "--since", "yesterday-ish"},
		{"bridge", "--worker-id", "7"}, // no --zmq-endpoint
		{"bridge", "--zmq-endpoint", "tcp://127.0.0.1:1", "--worker-id", "x"},
		{"demo", "--check-config", "--interval", "soon"},
		{"streams", "frobnicate"},
		{"streams", "--timeout", "x"},
		{"inspect"}, {"inspect", "frobnicate"}, {"inspect", "overlap", "--tokens", "1,x"},
		{"register", "--hint-endpoint", "tcp://127.0.0.1:1"}, // no --worker-id
		{"sink"}, // no --bind
		{"healthcheck", "--timeout", "0s"},
		{"healthcheck", "--path", "readyz"},
		{"run", "--check-config", "--connect-timeout", "-1s"},
		{"demo", "--check-config", "--connect-timeout", "-1s"},
		{"bridge", "--zmq-endpoint", "tcp://127.0.0.1:1", "--worker-id", "7", "--connect-timeout", "-1s"},
		{"register", "--worker-id", "7", "--hint-endpoint", "tcp://127.0.0.1:1", "--model", "m", "--kv-block-size", "16", "--connect-timeout", "-1s"},
	}
	for _, cmd := range commands {
		cases = append(cases, []string{cmd, "--no-such-flag"})
	}
	for _, args := range cases {
		code, out, errOut := call(args...)
		if code != 2 || errOut == "" || (len(args) > 0 && args[0] != "inspect" && out != "") {
			t.Errorf("%q: exit %d (want 2), stdout %.80q, stderr %q", args, code, out, errOut)
		}
	}
	// The unknown flag is named, with a pointer to the help, not the
	// whole flag list.
	_, _, errOut := call("run", "--no-such-flag")
	if !strings.Contains(errOut, "no-such-flag") || !strings.Contains(errOut, `"hintstream run --help"`) || strings.Count(errOut, "\n") > 3 {
		t.Errorf("run --no-such-flag: stderr %q", errOut)
	}
}

// TestRuntimeErrorsExit1: a valid command line that fails at work (no
// server, an unhealthy instance) exits 1, not 2.
func TestRuntimeErrorsExit1(t *testing.T) {
	for _, args := range [][]string{
		{"streams", "check", "--nats-url", "nats://127.0.0.1:1", "--timeout", "2s"},
		{"healthcheck", "--addr", "127.0.0.1:1", "--timeout", "2s"},
		{"inspect", "index", "--addr", "127.0.0.1:1", "--timeout", "2s"},
	} {
		if code, _, errOut := call(args...); code != 1 || errOut == "" {
			t.Errorf("%q: exit %d (want 1), stderr %q", args, code, errOut)
		}
	}
	// The long-running commands beside run retry NATS too, then give up.
	for _, args := range [][]string{
		{"demo", "--nats-url", "nats://127.0.0.1:1", "--connect-timeout", "1s", "--log-level", "error"},
		{"register", "--nats-url", "nats://127.0.0.1:1", "--connect-timeout", "1s", "--log-level", "error",
			"--worker-id", "7", "--hint-endpoint", "tcp://127.0.0.1:1", "--model", "m", "--kv-block-size", "16"},
		{"bridge", "--nats-url", "nats://127.0.0.1:1", "--connect-timeout", "1s", "--log-level", "error",
			"--zmq-endpoint", "tcp://127.0.0.1:1", "--worker-id", "7"},
	} {
		if code, _, errOut := call(args...); code != 1 || !strings.Contains(errOut, "within the connect timeout (1s, ") {
			t.Errorf("%q: exit %d (want 1), stderr %q", args, code, errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errOut := call(args...)
		if code != 0 || !strings.HasPrefix(out, "hintstream ") || !strings.Contains(out, "revision ") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/hintstream/hintstream", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-12-01T09:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{info, true, "v1.4.0 (revision 0123abcd, 2026-12-01T09:00:00Z, modified, go1.26.8)"},
		{&debug.BuildInfo{GoVersion: "go1.26.8"}, true, "(devel) (revision unknown, go1.26.8)"},
		{nil, false, "unknown"},
	} {
		if got := buildVersion(tc.info, tc.ok); got != tc.want {
			t.Errorf("buildVersion = %q, want %q", got, tc.want)
		}
	}
}

// TestNATSURLPrecedence: --nats-url wins over HINTSTREAM_NATS_URL, which
// wins over NATS_URL, which wins over the default; checked on a real
// server with `streams check` (exit 1 "absent" once connected: no
// streams exist; a connection error otherwise).
func TestNATSURLPrecedence(t *testing.T) {
	good := natstest.Start(t).ClientURL()
	const bad = "nats://127.0.0.1:1"
	connected := func(extra ...string) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		_ = streamsCmd(ctx, append([]string{"check", "--timeout", "5s"}, extra...), &out, &errb)
		return strings.Contains(out.String(), "absent")
	}
	for _, tc := range []struct {
		natsURL, hsURL string
		flag           []string
		want           bool
	}{
		{good, "", nil, true},
		{bad, good, nil, true},
		{good, bad, nil, false},
		{bad, bad, []string{"--nats-url", good}, true},
		{good, good, []string{"--nats-url", bad}, false},
	} {
		t.Setenv("NATS_URL", tc.natsURL)
		t.Setenv("HINTSTREAM_NATS_URL", tc.hsURL)
		if tc.hsURL == "" {
			unsetenv(t, "HINTSTREAM_NATS_URL")
		}
		if got := connected(tc.flag...); got != tc.want {
			t.Errorf("NATS_URL=%s HINTSTREAM_NATS_URL=%q flags %q: connected %v, want %v", tc.natsURL, tc.hsURL, tc.flag, got, tc.want)
		}
	}
}

// unsetenv removes key for the rest of the test (t.Setenv restores it).
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

// TestNATSURLEnvWinsOverConfigFile: NATS_URL is an environment variable
// like HINTSTREAM_NATS_URL, so it too wins over --config's nats-url.
func TestNATSURLEnvWinsOverConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hintstream.yaml")
	if err := os.WriteFile(path, []byte("nats-url: nats://from-file:4222\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unsetenv(t, "HINTSTREAM_NATS_URL")
	for _, tc := range []struct {
		natsURL string // "" unset
		want    string
	}{{"", "nats://from-file:4222"}, {"nats://from-env:4222", "nats://from-env:4222"}} {
		unsetenv(t, "NATS_URL")
		if tc.natsURL != "" {
			t.Setenv("NATS_URL", tc.natsURL)
		}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		url := fs.String("nats-url", natsURLEnv(""), "NATS server URL"+natsURLUsage)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		if err := applyConfigFile(fs, path); err != nil {
			t.Fatal(err)
		}
		if *url != tc.want {
			t.Errorf("NATS_URL=%q: --nats-url %q, want %q", tc.natsURL, *url, tc.want)
		}
	}
}
