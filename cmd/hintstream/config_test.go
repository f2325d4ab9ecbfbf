package main

import (
	"errors"
	"flag"
	"fmt"
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

// TestConfigRefusesHostileFiles: a YAML alias bomb ("billion laughs": 9⁹
// strings from 9 anchors) and a 100 MB file are refused with a clear
// error, quickly, before anything is expanded or read past the cap. The
// 100 MB file is sparse, so making it costs nothing.
func TestConfigRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	var bomb strings.Builder
	bomb.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for c := 'b'; c <= 'i'; c++ {
		p := string(c - 1)
		fmt.Fprintf(&bomb, "%c: &%c [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", c, c, p, p, p, p, p, p, p, p, p)
	}
	bomb.WriteString("log-level: *i\n")
	bombPath := filepath.Join(dir, "bomb.yaml")
	if err := os.WriteFile(bombPath, []byte(bomb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	bigPath := filepath.Join(dir, "big.yaml")
	f, err := os.Create(bigPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("log-level: info\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Just over the cap, and just at it (a comment pads it): the cap is
	// exact.
	over := filepath.Join(dir, "over.yaml")
	at := filepath.Join(dir, "at.yaml")
	pad := "log-level: info\n#" + strings.Repeat("x", maxConfigBytes-len("log-level: info\n#")-1) + "\n"
	if err := os.WriteFile(at, []byte(pad), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(over, []byte(pad+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
		tooLarge         bool
	}{
		{"alias bomb", bombPath, "excessive aliasing", false},
		{"100 MB", bigPath, "more than 1048576 bytes", true},
		{"cap + 1 byte", over, "more than 1048576 bytes", true},
		{"endless (/dev/zero)", "/dev/zero", "more than 1048576 bytes", true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		level := fs.String("log-level", "warn", "")
		began := time.Now()
		err := applyConfigFile(fs, c.path)
		took := time.Since(began)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--config") {
			t.Errorf("%s: %v, want an error naming --config with %q", c.name, err, c.want)
		}
		if errors.Is(err, ErrConfigTooLarge) != c.tooLarge {
			t.Errorf("%s: errors.Is(ErrConfigTooLarge) = %v", c.name, !c.tooLarge)
		}
		if *level != "warn" {
			t.Errorf("%s: a refused file set --log-level %q", c.name, *level)
		}
		// Generous for -race on a loaded machine; before the cap, the
		// 100 MB file took 1.9 s and a 110 MB list 17 s and 4.7 GB.
		if took > 3*time.Second {
			t.Errorf("%s: refused after %v", c.name, took)
		}
		t.Logf("%s: refused in %v: %v", c.name, took.Round(time.Microsecond), err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	level := fs.String("log-level", "warn", "")
	if err := applyConfigFile(fs, at); err != nil || *level != "info" {
		t.Fatalf("a file of exactly %d bytes: %v, --log-level %q", maxConfigBytes, err, *level)
	}
}
