package cmdline

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// Env takes a set variable and leaves the default for an unset or empty
// one; NATSURLEnv prefers HINTSTREAM_NATS_URL to NATS_URL.
func TestEnv(t *testing.T) {
	t.Setenv("CMDLINE_TEST_SET", "v")
	t.Setenv("CMDLINE_TEST_EMPTY", "")
	if got := Env("CMDLINE_TEST_SET", "d"); got != "v" {
		t.Fatalf("set: %q", got)
	}
	if got := Env("CMDLINE_TEST_EMPTY", "d"); got != "d" {
		t.Fatalf("empty: %q", got)
	}
	if got := Env("CMDLINE_TEST_UNSET_NEVER", "d"); got != "d" {
		t.Fatalf("unset: %q", got)
	}
	t.Setenv("NATS_URL", "nats://b")
	t.Setenv("HINTSTREAM_NATS_URL", "")
	if got := NATSURLEnv("nats://d"); got != "nats://b" {
		t.Fatalf("NATS_URL: %q", got)
	}
	t.Setenv("HINTSTREAM_NATS_URL", "nats://a")
	if got := NATSURLEnv("nats://d"); got != "nats://a" {
		t.Fatalf("HINTSTREAM_NATS_URL: %q", got)
	}
}

func TestListAndModels(t *testing.T) {
	if got := List(" a, ,b ,"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("List: %q", got)
	}
	if got := List(""); got != nil {
		t.Fatalf("List of nothing: %q", got)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	models := ModelsFlag(fs)
	if err := fs.Parse([]string{"--models", "llama, qwen"}); err != nil {
		t.Fatal(err)
	}
	if ms, err := models(); err != nil || !slices.Equal(ms, []string{"llama", "qwen"}) {
		t.Fatalf("--models: %q %v", ms, err)
	}
}
