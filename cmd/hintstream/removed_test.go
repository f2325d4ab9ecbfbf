package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	adr12 = "docs/adr/0012-no-header-free-prefetch.md"
	adr13 = "docs/adr/0013-one-retention-mechanism.md"
)

// recordOf is the record a removed flag's message must name.
func recordOf(name string) string {
	if strings.HasPrefix(name, "prefetch-ahead") || name == "max-prefetch-waste" {
		return adr12
	}
	return adr13
}

// TestRemovedFlagsNameTheADR: each removed flag, on every command, in
// each form the flag package takes, after other flags too, exits 2 with
// a message naming the flag and the record of its removal.
func TestRemovedFlagsNameTheADR(t *testing.T) {
	if len(removedFlags) != 12 {
		t.Fatalf("%d removed flags, want header-free prefetch's 4 and the retention planner's 8", len(removedFlags))
	}
	for name := range removedFlags {
		for _, cmd := range append(commands, "whatif") {
			for _, arg := range []string{"--" + name, "-" + name, "--" + name + "=1"} {
				code, out, errOut := call(cmd, arg, "1")
				if code != 2 || out != "" || !strings.Contains(errOut, "flag --"+name+" was removed: ") || !strings.Contains(errOut, recordOf(name)) {
					t.Errorf("%s %s: exit %d, stdout %q, stderr %q", cmd, arg, code, out, errOut)
				}
			}
		}
	}
	code, _, errOut := call("run", "--check-config", "--log-level", "info", "--max-prefetch-waste", "1")
	want := "hintstream run: flag --max-prefetch-waste was removed: header-free prefetch "
	if code != 2 || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, adr12) {
		t.Errorf("after other flags: exit %d, stderr %q", code, errOut)
	}
}

// TestRemovedFlagScanReadsAsParse: the scan finds a removed flag only
// where fs.Parse would read a flag, not in a flag's value or after the
// flags end.
func TestRemovedFlagScanReadsAsParse(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("s", "", "a string")
	fs.Bool("b", false, "a bool")
	for _, c := range []struct {
		args    []string
		removed bool
	}{
		{[]string{"-s", "--prefetch-ahead"}, false},     // a value
		{[]string{"stray", "--prefetch-ahead"}, false},  // after the flags
		{[]string{"--", "--prefetch-ahead"}, false},     // after the flags
		{[]string{"--help", "--prefetch-ahead"}, false}, // Parse stops at help
		{[]string{"-s=x", "--prefetch-ahead"}, true},    // "=": no value taken
		{[]string{"-b", "--prefetch-ahead"}, true},      // a bool takes none
		{[]string{"--prefetch-ahead-warmup=0"}, true},
	} {
		err := removedFlagInArgs(fs, c.args)
		if (err != nil) != c.removed || (err != nil && !strings.Contains(err.Error(), adr12)) {
			t.Errorf("%q: %v, want removed %v", c.args, err, c.removed)
		}
	}
	// A command that still defines a flag of that name takes it.
	own := flag.NewFlagSet("t", flag.ContinueOnError)
	own.Bool("prefetch-ahead", false, "")
	if err := removedFlagInArgs(own, []string{"--prefetch-ahead"}); err != nil {
		t.Errorf("a defined flag: %v", err)
	}
}

// TestRemovedConfigKeysNameTheADR: a --config file (whose keys are flag
// names) holding a removed flag fails, naming the key and the record,
// before anything runs. No removed flag had an environment variable.
func TestRemovedConfigKeysNameTheADR(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hintstream.yaml")
	for name := range removedFlags {
		if err := os.WriteFile(path, []byte(name+": 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := call("run", "--check-config", "--config", path)
		if code != 2 || !strings.Contains(errOut, "--config "+path+": flag --"+name+" was removed: ") || !strings.Contains(errOut, recordOf(name)) {
			t.Errorf("%s in a config file: exit %d, stderr %q", name, code, errOut)
		}
	}
}

// TestRemovedInspectNamesTheADR: `inspect ahead` and `inspect
// retention`, which served removed features' views, say so.
func TestRemovedInspectNamesTheADR(t *testing.T) {
	for what, adr := range map[string]string{"ahead": adr12, "retention": adr13} {
		code, _, errOut := call("inspect", what)
		if code != 2 || !strings.Contains(errOut, "inspect "+what+" was removed: ") || !strings.Contains(errOut, adr) {
			t.Errorf("inspect %s: exit %d, stderr %q", what, code, errOut)
		}
	}
}
