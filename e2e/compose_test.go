package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeService is the part of a Compose service the file may use; the
// file is decoded with KnownFields, so a misspelt key (pull-policy,
// helthcheck) fails instead of being ignored by the test and obeyed by
// nobody.
type composeService struct {
	Image      string   `yaml:"image"`
	PullPolicy string   `yaml:"pull_policy"`
	Command    []string `yaml:"command"`
	Ports      []string `yaml:"ports"`
	Volumes    []string `yaml:"volumes"`
	Restart    string   `yaml:"restart"`
	Build      *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Healthcheck *struct {
		Test        []string `yaml:"test"`
		Disable     bool     `yaml:"disable"`
		Interval    string   `yaml:"interval"`
		Timeout     string   `yaml:"timeout"`
		Retries     int      `yaml:"retries"`
		StartPeriod string   `yaml:"start_period"`
	} `yaml:"healthcheck"`
	// depends_on in its long form: the short (list) form has no
	// condition and fails to decode here.
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

func readCompose(t *testing.T) map[string]composeService {
	t.Helper()
	return readComposeAt(t, "../docker-compose.yml")
}

// readComposeAt decodes a compose file's services, refusing unknown keys.
func readComposeAt(t *testing.T, file string) map[string]composeService {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]composeService `yaml:"services"`
		Volumes  map[string]any            `yaml:"volumes"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return f.Services
}

// No container engine runs here, so the compose file is checked by
// reading it: its services, builds, ports and commands, each hintstream
// command validated by the binary itself, and what makes
// `docker compose up --build` start as written on a clean machine: one
// build, no pull of the local image, healthchecks, and depends_on
// conditions on them.
func TestComposeFile(t *testing.T) {
	services := readCompose(t)
	nats, ok := services["nats"]
	if !ok || !slices.Contains(nats.Command, "-js") || !slices.Contains(nats.Ports, "4222:4222") {
		t.Fatalf("nats service must run JetStream (-js) on 4222: %+v", nats)
	}
	var built, replicas int
	groups := map[string]bool{}
	for name, s := range services {
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
		// docker/compose#8805: a service naming a local image with neither
		// build nor pull_policy build/never is pulled first, and fails.
		if s.Build == nil && s.PullPolicy != "never" && s.PullPolicy != "build" {
			t.Errorf("%s uses hintstream:dev without building it or pull_policy never/build (got %q)", name, s.PullPolicy)
		}
		if d, ok := s.DependsOn["nats"]; !ok && !dependsOnRun(services, s) {
			t.Errorf("%s does not wait for nats", name)
		} else if ok && d.Condition != "service_healthy" {
			t.Errorf("%s waits for nats with condition %q, want service_healthy", name, d.Condition)
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
			checkReplicaHealthcheck(t, name, s)
		} else if s.Healthcheck == nil || !s.Healthcheck.Disable {
			// The image's HEALTHCHECK asks /readyz, which only run serves.
			t.Errorf("%s (%s) serves no /readyz but keeps the image's HEALTHCHECK: disable it", name, s.Command[0])
		}
	}
	if built != 1 || replicas != 2 || len(groups) != 1 {
		t.Fatalf("want one build, two hintstream replicas in one group: built %d, replicas %d, groups %v", built, replicas, groups)
	}
	if _, ok := services["demo"]; !ok {
		t.Fatal("no demo service (workers and traffic)")
	}
	if lg, ok := services["loadgen"]; !ok || !slices.Contains(lg.Command, "--traffic-only") {
		t.Fatal("no load generator service")
	}
}

// dependsOnRun reports whether s waits for a replica (which waits for nats).
func dependsOnRun(services map[string]composeService, s composeService) bool {
	for dep := range s.DependsOn {
		if d, ok := services[dep]; ok && len(d.Command) > 0 && (d.Command[0] == "run" || dependsOnRun(services, d)) {
			return true
		}
	}
	return false
}

// TestComposeStartOrder: every depends_on names a service and waits for
// its health when it has a healthcheck; nats' healthcheck asks
// nats-server's /healthz?js-enabled-only=true on the monitor port the
// command enables.
func TestComposeStartOrder(t *testing.T) {
	services := readCompose(t)
	for name, s := range services {
		for dep, d := range s.DependsOn {
			target, ok := services[dep]
			if !ok {
				t.Errorf("%s depends on %s, which is no service", name, dep)
				continue
			}
			healthy := target.Healthcheck != nil && !target.Healthcheck.Disable
			switch {
			case healthy && d.Condition != "service_healthy":
				t.Errorf("%s waits for %s with %q although %s has a healthcheck: want service_healthy", name, dep, d.Condition, dep)
			case !healthy && d.Condition == "service_healthy":
				t.Errorf("%s waits for %s to be healthy, but %s has no healthcheck: it would never start", name, dep, dep)
			case !slices.Contains([]string{"service_healthy", "service_started", "service_completed_successfully"}, d.Condition):
				t.Errorf("%s waits for %s with unknown condition %q", name, dep, d.Condition)
			}
		}
	}

	nats := services["nats"]
	i := slices.Index(nats.Command, "-m")
	if i < 0 || i+1 >= len(nats.Command) {
		t.Fatalf("nats runs without a monitor port (-m): %v", nats.Command)
	}
	monitor := nats.Command[i+1]
	hc := nats.Healthcheck
	if hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" {
		t.Fatalf("nats healthcheck %+v: want an exec-form CMD", hc)
	}
	url := hc.Test[len(hc.Test)-1]
	if want := "http://127.0.0.1:" + monitor + "/healthz?js-enabled-only=true"; url != want {
		t.Errorf("nats healthcheck asks %q, want %q", url, want)
	}
	// busybox wget (the alpine image's) exits 1 on a non-2xx answer; the
	// body goes to /dev/null, not into a file in the container.
	if hc.Test[1] != "wget" || !slices.Contains(hc.Test, "-q") || !slices.Contains(hc.Test, "/dev/null") {
		t.Errorf("nats healthcheck %v", hc.Test)
	}
	if !strings.Contains(nats.Image, "alpine") {
		t.Errorf("nats image %q may not have wget", nats.Image)
	}
}

// checkReplicaHealthcheck: a replica's healthcheck is `hintstream
// healthcheck` on the port of its --http-addr (so /readyz); run against
// nothing listening it must fail as unhealthy, not as a usage error.
func checkReplicaHealthcheck(t *testing.T, name string, s composeService) {
	t.Helper()
	hc := s.Healthcheck
	if hc == nil || hc.Disable || len(hc.Test) < 3 || hc.Test[0] != "CMD" ||
		path.Base(hc.Test[1]) != "hintstream" || hc.Test[2] != "healthcheck" {
		t.Errorf("%s healthcheck %+v: want [CMD, hintstream, healthcheck, ...]", name, hc)
		return
	}
	httpAddr := s.Command[slices.Index(s.Command, "--http-addr")+1]
	args := hc.Test[3:]
	if i := slices.Index(args, "--addr"); i < 0 || i+1 >= len(args) || args[i+1] != httpAddr {
		t.Errorf("%s healthcheck %v does not ask its --http-addr %s", name, args, httpAddr)
	}
	if i := slices.Index(args, "--path"); i >= 0 && (i+1 >= len(args) || args[i+1] != "/readyz") {
		t.Errorf("%s healthcheck asks %v, want /readyz", name, args)
	}
	// 127.0.0.1:1 listens nowhere: the flags parse and the check fails.
	args = slices.Clone(args)
	args[slices.Index(args, "--addr")+1] = "127.0.0.1:1"
	out, code := healthcheck(t, nil, args...)
	if code != 1 || !strings.Contains(out, "unhealthy") {
		t.Errorf("%s healthcheck %v against nothing: exit %d: %s", name, args, code, out)
	}
}

// checkDockerfile wants a multi-stage cgo build with libzmq at build and
// at run time, a non-root user, and a HEALTHCHECK that runs the binary's
// own healthcheck (the run stage has no curl or wget) on the address
// `run` serves by default in the image.
func checkDockerfile(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Count(s, "\nFROM ") < 1 || strings.Count(s, "FROM ") < 2 {
		t.Errorf("%s is not a multi-stage build", file)
	}
	for _, want := range []string{"libzmq3-dev", "libzmq5", "CGO_ENABLED=1", "COPY --from=build",
		"USER 65534:65534", "ENV HINTSTREAM_HTTP_ADDR=:9090", "EXPOSE 9090",
		`CMD ["/usr/local/bin/hintstream", "healthcheck"]`} {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %q", file, want)
		}
	}
	if !regexp.MustCompile(`(?m)^HEALTHCHECK .*--timeout=\d+s`).MatchString(s) {
		t.Errorf("%s has no HEALTHCHECK with a timeout", file)
	}
	checkDockerignore(t, path.Join(path.Dir(file), ".dockerignore"))
}

// checkDockerignore: the build context leaves out .git, bin/ and
// .hintstream/ (and the rest that only makes it slow), and keeps every
// file the build reads: go.mod, go.sum and the packages of the binary.
func checkDockerignore(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no .dockerignore: COPY . . would send .git, bin/ and .hintstream/: %v", err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			if strings.HasPrefix(l, "!") {
				t.Fatalf("%s: exceptions (%s) are beyond this check", file, l)
			}
			patterns = append(patterns, strings.Trim(l, "/"))
		}
	}
	ignored := func(p string) bool {
		parts := strings.Split(p, "/")
		for _, pat := range patterns {
			if rest, ok := strings.CutPrefix(pat, "**/"); ok {
				if m, _ := path.Match(rest, parts[len(parts)-1]); m {
					return true
				}
				continue
			}
			for i := range parts {
				if m, _ := path.Match(pat, strings.Join(parts[:i+1], "/")); m {
					return true
				}
			}
		}
		return false
	}
	for _, p := range []string{".git", "bin/hintstream", ".hintstream/nats", "loadtest/out/summary.md"} {
		if !ignored(p) {
			t.Errorf("%s does not leave out %s", file, p)
		}
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "../cmd/hintstream").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root = path.Dir(root)
	needed := []string{"go.mod", "go.sum"}
	for _, dir := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(dir, root+"/"); ok {
			needed = append(needed, rel+"/x.go")
		}
	}
	if len(needed) < 10 {
		t.Fatalf("go list found only %v", needed)
	}
	for _, p := range needed {
		if ignored(p) {
			t.Errorf("%s leaves out %s, which the build needs", file, p)
		}
	}
}
