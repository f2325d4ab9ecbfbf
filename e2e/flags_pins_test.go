package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRunPinFlags: run --check-config accepts the pin caps and slot
// timings at their edges and refuses what lies past them, naming the flag.
func TestRunPinFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--pin-max-keys", "1", "--pin-max-bytes", "1", "--pin-slot-linger", "0s", "--pin-slot-marker-ttl", "1s"}, ""},
		{[]string{"--pin-max-keys", "0"}, "--pin-max-keys must be at least 1"},
		{[]string{"--pin-slot-marker-ttl", "999ms"}, "--pin-slot-marker-ttl must be at least 1s"},
	} {
		out, err := exec.Command(binary, append(append([]string{"run"}, tc.args...), "--check-config")...).CombinedOutput()
		switch {
		case tc.err == "" && (err != nil || !strings.Contains(string(out), "configuration ok")):
			t.Errorf("%v: %v\n%s", tc.args, err, out)
		case tc.err != "" && (err == nil || !strings.Contains(string(out), tc.err)):
			t.Errorf("%v: want an error naming %q, got %v\n%s", tc.args, tc.err, err, out)
		}
	}
}
