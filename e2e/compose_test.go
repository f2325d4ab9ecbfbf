package e2e

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// No container engine runs here, so the compose file is checked by
// reading it: its services, builds, ports and commands, each hintstream
// command validated by the binary itself.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]struct {
			Image   string   `yaml:"image"`
			Command []string `yaml:"command"`
			Ports   []string `yaml:"ports"`
			Build   *struct {
				Context    string `yaml:"context"`
				Dockerfile string `yaml:"dockerfile"`
			} `yaml:"build"`
			DependsOn []string `yaml:"depends_on"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	nats, ok := f.Services["nats"]
	if !ok || !slices.Contains(nats.Command, "-js") || !slices.Contains(nats.Ports, "4222:4222") {
		t.Fatalf("nats service must run JetStream (-js) on 4222: %+v", nats)
	}
	var built, replicas int
	groups := map[string]bool{}
	for name, s := range f.Services {
		if s.Build != nil {
			built++
			df := s.Build.Dockerfile
			if df == "" {
				df = "Dockerfile"
			}
			checkDockerfile(t, "../"+strings.TrimPrefix(s.Build.Context+"/", "./")+df)
			if s.Image != "hintstream:dev" {
				t.Errorf("%s builds an image it does not name hintstream:dev", name)
			}
		}
		if s.Image != "hintstream:dev" {
			continue
		}
		if len(s.DependsOn) == 0 {
			t.Errorf("%s does not wait for nats", name)
		}
		if !slices.Contains(s.Command, "nats://nats:4222") {
			t.Errorf("%s does not use the compose NATS server: %v", name, s.Command)
		}
		// The binary itself validates the command line.
		out, err := exec.Command(binary, append(s.Command, "--check-config")...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "configuration ok") {
			t.Errorf("%s: %v: %v\n%s", name, s.Command, err, out)
		}
		if s.Command[0] == "run" {
			replicas++
			if !slices.Contains(s.Command, "--http-addr") || len(s.Ports) == 0 {
				t.Errorf("%s exposes no /metrics", name)
			}
			i := slices.Index(s.Command, "--group")
			if i < 0 || i+1 >= len(s.Command) {
				t.Errorf("%s runs without --group", name)
			} else {
				groups[s.Command[i+1]] = true
			}
		}
	}
	if built != 1 || replicas != 2 || len(groups) != 1 {
		t.Fatalf("want one build, two hintstream replicas in one group: built %d, replicas %d, groups %v", built, replicas, groups)
	}
	if _, ok := f.Services["demo"]; !ok {
		t.Fatal("no demo service (workers and traffic)")
	}
	if lg, ok := f.Services["loadgen"]; !ok || !slices.Contains(lg.Command, "--traffic-only") {
		t.Fatal("no load generator service")
	}
}

// checkDockerfile wants a multi-stage cgo build with libzmq at build and
// at run time.
func checkDockerfile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Count(s, "\nFROM ") < 1 || strings.Count(s, "FROM ") < 2 {
		t.Errorf("%s is not a multi-stage build", path)
	}
	for _, want := range []string{"libzmq3-dev", "libzmq5", "CGO_ENABLED=1", "COPY --from=build"} {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %q", path, want)
		}
	}
}
