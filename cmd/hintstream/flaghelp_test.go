package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagGroups: flagGroups names only flags its command defines, each
// once; --help-all lists every flag of the command exactly once, under
// the table's heading (the rest under headOther); --help lists the short
// lists alone and counts the rest right.
func TestFlagGroups(t *testing.T) {
	for cmd, groups := range flagGroups {
		heading := map[string]string{} // flag name -> its heading in the table
		short := map[string]bool{}
		for _, g := range groups {
			for i, names := range []string{g.short, g.more} {
				for _, n := range strings.Fields(names) {
					if h, dup := heading[n]; dup {
						t.Errorf("%s: --%s is in %q and in %q", cmd, n, h, g.heading)
					}
					heading[n] = g.heading
					short[n] = i == 0
				}
			}
		}
		_, all, _ := parseHelp(t, cmd, helpOutput(t, cmd, "--help-all"))
		listed := map[string]string{}
		for _, sec := range all {
			for _, f := range sec.flags {
				if h, dup := listed[f.name]; dup {
					t.Errorf("%s --help-all: --%s under %q and %q", cmd, f.name, h, sec.heading)
				}
				listed[f.name] = sec.heading
				if want, ok := heading[f.name]; ok && want != sec.heading || !ok && sec.heading != headOther {
					t.Errorf("%s --help-all: --%s under %q, want %q", cmd, f.name, sec.heading, want)
				}
			}
		}
		for n := range heading {
			if _, ok := listed[n]; !ok {
				t.Errorf("flagGroups[%q] names --%s, which %s does not define", cmd, n, cmd)
			}
		}
		_, some, footer := parseHelp(t, cmd, helpOutput(t, cmd, "--help"))
		shown := 0
		for _, sec := range some {
			for _, f := range sec.flags {
				shown++
				if !short[f.name] || heading[f.name] != sec.heading {
					t.Errorf("%s --help: --%s under %q is not in its short list there", cmd, f.name, sec.heading)
				}
			}
		}
		if want := fmt.Sprintf(`"hintstream %s --help-all" (%d more)`, cmd, len(listed)-shown); !strings.Contains(footer, want) ||
			!strings.Contains(footer, "docs/configuration.md") {
			t.Errorf("%s --help: last line %q, want it to say %s and docs/configuration.md", cmd, footer, want)
		}
		if cmd == "run" && (shown < 20 || shown > 30) {
			t.Errorf("run --help shows %d flags, want 20 to 30", shown)
		}
	}
}

// TestHelpAll: --help-all stops the parse as -h does (a later bad flag
// is not reached) and exits 0; a command without groups prints its
// --help; a config file cannot name it, as it is no flag.
func TestHelpAll(t *testing.T) {
	code, out, errOut := call("run", "--group", "g", "--help-all", "--no-such-flag")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: hintstream run") || !strings.Contains(out, "\n"+headOther+":\n") {
		t.Fatalf("run --help-all: exit %d, stderr %q\n%s", code, errOut, out)
	}
	// The listing shows defaults, not values parsed before --help-all.
	if !strings.Contains(out, `(default "hintstream")`) {
		t.Errorf("run --group g --help-all: --group's default not shown\n%s", out)
	}
	for _, cmd := range []string{"sink", "adapter", "healthcheck"} {
		if _, ok := flagGroups[cmd]; ok {
			continue
		}
		_, help, _ := call(cmd, "--help")
		if code, all, _ := call(cmd, "--help-all"); code != 0 || all != help {
			t.Errorf("%s --help-all: exit %d, not its --help:\n%s", cmd, code, all)
		}
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("help-all: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := call("run", "--check-config", "--config", path); code != 2 || !strings.Contains(errOut, "help-all") {
		t.Errorf("config key help-all: exit %d, %q", code, errOut)
	}
}
