package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRunFlagBounds: run accepts the edge values of --overlap-jump (1:
// every block), --pin-renew-max (0: never renew) and
// --sender-settle-delay (0: ack at once) and refuses what lies past them,
// naming the flag.
func TestRunFlagBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // "" if accepted
	}{
		{[]string{"--overlap-jump", "1"}, ""},
		{[]string{"--overlap-jump", "0"}, "--overlap-jump must be at least 1"},
		{[]string{"--pin-renew-max", "0"}, ""},
		{[]string{"--pin-renew-max", "-1s"}, "--pin-renew-max must not be negative"},
		{[]string{"--sender-settle-delay", "0"}, ""},
		{[]string{"--sender-settle-delay", "-1ms"}, "--sender-settle-delay must not be negative"},
		// Issue 19: holding area, renewal budget, bucket caps (0: none), reclaim.
		{[]string{"--holding-workers", "1", "--holding-blocks", "1"}, ""},
		{[]string{"--holding-workers", "0"}, "--holding-workers must be at least 1"},
		{[]string{"--holding-blocks", "0"}, "--holding-blocks must be at least 1"},
		{[]string{"--pin-renew-rate", "0.5"}, ""},
		{[]string{"--pin-renew-rate", "0"}, "--pin-renew-rate must be positive"},
		{[]string{"--pin-slots-max-bytes", "0", "--request-index-max-bytes", "0"}, ""},
		{[]string{"--pin-slots-max-bytes", "-1"}, "--pin-slots-max-bytes must not be negative"},
		{[]string{"--request-index-max-bytes", "-1"}, "--request-index-max-bytes must not be negative"},
		{[]string{"--snapshot-reclaim-grace", "1ms"}, ""},
		{[]string{"--snapshot-reclaim-grace", "0s"}, "--snapshot-reclaim-grace must be positive"},
		// Issue 12: 0 turns snapshots off (as the README says); negative is refused.
		{[]string{"--snapshot-interval", "0"}, ""},
		{[]string{"--snapshot-interval", "-1s"}, "--snapshot-interval must not be negative"},
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
