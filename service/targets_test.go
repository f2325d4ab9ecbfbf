package service

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// A hint kind turned on with no target to reach is refused, naming the
// flags that would give it one; so is a target configured wrong.
func TestTargetsRefused(t *testing.T) {
	t.Setenv("DYN_KVM_PIN_ENDPOINT", "")
	for _, tc := range []struct {
		args []string
		want string // "" : accepted
	}{
		{nil, ""},
		{[]string{"--pins", "on"}, "--pins on, but no pin target is set"},
		{[]string{"--pins", "sometimes"}, `--pins "sometimes"`},
		{[]string{"--pins", "on", "--lmcache-controller", "http://127.0.0.1:9000"}, ""},
		{[]string{"--pins", "on", "--retain-on-worker"}, ""},
		{[]string{"--pins", "on", "--pin-endpoint", "tcp://127.0.0.1:5557"}, ""},
		{[]string{"--lmcache-controller", "lmcache:9000"}, "--lmcache-controller"},
		{[]string{"--lmcache-controller", "http://127.0.0.1:9000", "--lmcache-repin", "-1s"}, "negative duration"},
		{[]string{"--lmcache-controller", "http://127.0.0.1:9000", "--lmcache-repin", "1s"}, ""},
	} {
		c, err := parseRunFlags(tc.args...)
		if err == nil {
			err = c.Defaults().Validate()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v refused: %v", tc.args, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: err %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

// At start run says, in one line per hint kind, which targets it reaches.
func TestReportTargets(t *testing.T) {
	t.Setenv("DYN_KVM_PIN_ENDPOINT", "")
	for _, tc := range []struct {
		args []string
		pin  []string // what the pin line must name; nil: "none (off)"
	}{
		{nil, nil},
		{[]string{"--pin-endpoint", "tcp://127.0.0.1:5557", "--pins", "off"}, nil},
		{[]string{"--pin-endpoint", "tcp://127.0.0.1:5557", "--lmcache-controller", "http://127.0.0.1:9000", "--retain-on-worker"},
			[]string{"Mooncake master tcp://127.0.0.1:5557", "LMCache controller http://127.0.0.1:9000", "hintstream.retain@1.0"}},
	} {
		c, err := parseRunFlags(tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		s := &Service{cfg: c.Defaults(), log: slog.New(slog.NewTextHandler(&buf, nil))}
		s.reportTargets()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "kind=prefetch") || !strings.Contains(lines[0], "kv.prefetch@1.0") ||
			!strings.Contains(lines[1], "kind=pin") {
			t.Fatalf("%v: lines %q", tc.args, lines)
		}
		if tc.pin == nil && !strings.Contains(lines[1], "none (off)") {
			t.Errorf("%v: pin line %q, want none", tc.args, lines[1])
		}
		for _, w := range tc.pin {
			if !strings.Contains(lines[1], w) {
				t.Errorf("%v: pin line %q does not name %q", tc.args, lines[1], w)
			}
		}
	}
}
