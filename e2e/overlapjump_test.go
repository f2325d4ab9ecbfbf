package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOverlapJumpFlag: the binary accepts --overlap-jump 1 (every block)
// and refuses a stride below 1, naming the flag.
func TestOverlapJumpFlag(t *testing.T) {
	out, err := exec.Command(binary, "run", "--overlap-jump", "1", "--check-config").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "configuration ok") {
		t.Fatalf("--overlap-jump 1: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "run", "--overlap-jump", "0", "--check-config").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--overlap-jump must be at least 1") {
		t.Fatalf("--overlap-jump 0: %v\n%s", err, out)
	}
}
