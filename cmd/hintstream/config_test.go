package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestConfigFilePrecedence(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	a := fs.String("a", "def-a", "from the command line")
	b := fs.String("b", env("HS_TEST_B", "def-b"), "(env HS_TEST_B)")
	c := fs.Duration("c", time.Second, "from the file")
	d := fs.String("d", "", "a list")
	e := fs.Bool("e", false, "a bool")
	untouched := fs.Int("f", 7, "default")
	t.Setenv("HS_TEST_B", "from-env")
	*b = env("HS_TEST_B", "def-b") // as if the flag were defined now
	path := filepath.Join(t.TempDir(), "hintstream.yaml")
	if err := os.WriteFile(path, []byte("a: file-a\nb: file-b\nc: 3s\nd: [x, y]\ne: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"-a", "flag-a"}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fs, path); err != nil {
		t.Fatal(err)
	}
	if *a != "flag-a" || *b != "from-env" || *c != 3*time.Second || *d != "x,y" || !*e || *untouched != 7 {
		t.Fatalf("a=%q b=%q c=%v d=%q e=%v f=%d", *a, *b, *c, *d, *e, *untouched)
	}
	if err := os.WriteFile(path, []byte("no-such-flag: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fs, path); err == nil || !strings.Contains(err.Error(), "no-such-flag") {
		t.Fatalf("unknown key: %v", err)
	}
	if err := os.WriteFile(path, []byte("c: soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := flag.NewFlagSet("t", flag.ContinueOnError)
	fresh.Duration("c", time.Second, "")
	if err := applyConfigFile(fresh, path); err == nil {
		t.Fatal("a bad duration was accepted")
	}
}

// Every flag whose default comes from the environment must name its
// variable in its usage, or a config file would override the environment.
func TestEnvFlagsNameTheirVariable(t *testing.T) {
	re := regexp.MustCompile(`(?:\benv|cmdline\.Env)\("([A-Z0-9_]+)"`)
	files := []string{"run.go", "natsflags.go", "config.go", "replay.go", "bridge.go"}
	// run's Config flags are registered beside service.Config.
	svc, err := filepath.Glob("../../service/flags*.go")
	if err != nil || len(svc) == 0 {
		t.Fatalf("service flag files: %v %v", svc, err)
	}
	files = append(files, svc...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				if !strings.Contains(line, "(env "+m[1]) {
					t.Errorf("%s: the flag reading %s does not say (env %s) in its usage", f, m[1], m[1])
				}
			}
		}
	}
}
