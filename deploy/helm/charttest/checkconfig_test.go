package charttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// binary is the hintstream command built from this repository by TestMain.
var binary string

// repoRoot is the main module's directory, three levels up.
var repoRoot = filepath.Join("..", "..", "..")

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "charttest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "hintstream")
	build := exec.Command("go", "build", "-o", binary, "./cmd/hintstream")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build hintstream: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// checkConfig runs the rendered container as the kubelet would, short of
// NATS: the image's entrypoint (the binary) with the container's args and
// env plus --check-config, the Secrets it mounts written where it mounts
// them (under a temporary root) and the Secret keys it reads from the
// environment resolved from sec. A path, key or flag the chart gets wrong
// fails here, as it would fail the pod.
func checkConfig(t *testing.T, r *rendered, sec secrets) {
	t.Helper()
	c := r.container(t)
	if len(c.Command) != 0 {
		t.Fatalf("the container overrides the image's entrypoint: %v", c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Fatalf("container args do not start with run: %v", c.Args)
	}
	root := t.TempDir()
	volumes := map[string]corev1.Volume{}
	for _, v := range r.Deployment.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	var mounts []string
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Fatalf("volumeMount %s names no volume", m.Name)
		}
		dir := filepath.Join(root, m.MountPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, m.MountPath)
		if v.Secret == nil {
			continue
		}
		data, ok := sec[v.Secret.SecretName]
		if !ok {
			t.Fatalf("volume %s mounts Secret %q, which the test does not have", v.Name, v.Secret.SecretName)
		}
		if len(v.Secret.Items) == 0 {
			t.Fatalf("volume %s mounts all of Secret %q: list the keys it needs", v.Name, v.Secret.SecretName)
		}
		for _, it := range v.Secret.Items {
			b, ok := data[it.Key]
			if !ok {
				t.Fatalf("volume %s: Secret %q has no key %q", v.Name, v.Secret.SecretName, it.Key)
			}
			if err := os.WriteFile(filepath.Join(dir, it.Path), b, 0o400); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The environment the pod would have: nothing of this machine's
	// HINTSTREAM_* or DYN_* settings leaks in.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HINTSTREAM_") && !strings.HasPrefix(kv, "DYN_") {
			env = append(env, kv)
		}
	}
	for _, e := range c.Env {
		val := e.Value
		if ref := e.ValueFrom; ref != nil {
			if ref.SecretKeyRef == nil {
				t.Fatalf("env %s: only secretKeyRef is expected", e.Name)
			}
			b, ok := sec[ref.SecretKeyRef.Name][ref.SecretKeyRef.Key]
			if !ok {
				t.Fatalf("env %s: Secret %q has no key %q", e.Name, ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
			}
			val = string(b)
		}
		env = append(env, e.Name+"="+val)
	}

	var args []string
	for i := 1; i < len(c.Args); i++ {
		a := c.Args[i]
		for _, m := range mounts {
			if strings.HasPrefix(a, m+"/") {
				a = filepath.Join(root, a)
			}
		}
		args = append(args, a)
	}
	cmd := exec.Command(binary, append(append([]string{"run"}, args...), "--check-config")...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "configuration ok") {
		t.Fatalf("hintstream %s --check-config: %v\n%s", strings.Join(c.Args, " "), err, out)
	}
}
