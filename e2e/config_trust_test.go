package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigMeansWhatItSays runs `hintstream run --check-config` the
// way a careless operator did: a YAML map for a string, an empty
// environment variable over the file, and values that passed the check
// and then failed at start-up. Each must be refused by the check,
// naming what is wrong; an empty variable must leave the file's value
// in force.
func TestConfigMeansWhatItSays(t *testing.T) {
	dir := t.TempDir()
	yaml := func(body string) string {
		p := filepath.Join(dir, strings.NewReplacer(" ", "_", ":", "_", "/", "_", "\n", "_").Replace(body)[:min(20, len(body))]+".yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		err  string // "" if accepted
	}{
		{"a YAML map is not a group name", nil, []string{"--config", yaml("group: {team: a}\n")}, "value is a map"},
		{"a map inside a list", nil, []string{"--config", yaml("models: [a, {b: c}]\n")}, "list item 1 is a map"},
		// The file's group a.b is in force under an empty HINTSTREAM_GROUP,
		// so the check fails on it: the empty variable did not win.
		{"an empty variable is unset", []string{"HINTSTREAM_GROUP="}, []string{"--config", yaml("group: a.b\n")}, `"a.b-requests"`},
		{"a variable that is set wins", []string{"HINTSTREAM_GROUP=g"}, []string{"--config", yaml("group: a.c\n")}, ""},
		{"an empty pin endpoint leaves the file's", []string{"DYN_KVM_PIN_ENDPOINT="}, []string{"--config", yaml("pin-endpoint: inproc://x\n")}, "inproc://"},
		{"a group with a dot", nil, []string{"--group", "a.b"}, "--requests-durable (default <group>-requests)"},
		{"a durable with a space", nil, []string{"--requests-durable", "x y"}, "contains white space"},
		{"max age below the duplicate window", nil, []string{"--requests-max-age", "1m", "--request-index-ttl", "30s"}, "below its duplicate window"},
		{"an inproc pin endpoint", nil, []string{"--pin-endpoint", "inproc://nobody"}, "inproc:// endpoints exist only inside one process"},
		{"a wildcard pin endpoint", nil, []string{"--pin-endpoint", "tcp://0.0.0.0:50052"}, "wildcard"},
		{"a good pin endpoint", nil, []string{"--pin-endpoint", "tcp://127.0.0.1:50052"}, ""},
	} {
		cmd := exec.Command(binary, append(append([]string{"run"}, tc.args...), "--check-config")...)
		cmd.Env = append(os.Environ(), tc.env...)
		out, err := cmd.CombinedOutput()
		switch {
		case tc.err == "" && (err != nil || !strings.Contains(string(out), "configuration ok")):
			t.Errorf("%s: %v\n%s", tc.name, err, out)
		case tc.err != "" && (err == nil || !strings.Contains(string(out), tc.err)):
			t.Errorf("%s: want an error naming %q, got %v\n%s", tc.name, tc.err, err, out)
		}
	}
}
