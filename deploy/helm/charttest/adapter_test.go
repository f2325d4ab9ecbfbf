package charttest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// workerPod is a worker chart's pod, as a chart that depends on this one
// writes it: its engine container and the adapter template.
const workerPod = `apiVersion: v1
kind: Pod
metadata:
  name: worker-0
spec:
  containers:
    - name: sglang
      image: lmsysorg/sglang:latest
    {{- include "hintstream.adapter.container" . | nindent 4 }}
`

// renderWorker renders the chart with workerPod added as a template and
// decodes the pod strictly.
func renderWorker(t *testing.T, vals map[string]any) (*corev1.Pod, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	chrt.Templates = append(chrt.Templates, &chart.File{Name: "templates/zz-worker-pod.yaml", Data: []byte(workerPod)})
	values, err := chartutil.ToRenderValues(chrt, vals,
		chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: true, Revision: 1},
		chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Engine{Strict: true}.Render(chrt, values)
	if err != nil {
		return nil, err
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(files["hintstream/templates/zz-worker-pod.yaml"]), &pod); err != nil {
		return nil, fmt.Errorf("worker pod does not decode strictly: %w\n%s", err, files["hintstream/templates/zz-worker-pod.yaml"])
	}
	return &pod, nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestAdapterSidecarOff: by default the template adds nothing to the
// worker's pod, and the chart's own objects are unchanged.
func TestAdapterSidecarOff(t *testing.T) {
	pod, err := renderWorker(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("adapter disabled, but the pod has %d containers", len(pod.Spec.Containers))
	}
	if _, ok := flagValue(render(t, nil).container(t).Args, "--retain-on-worker"); ok {
		t.Fatal("--retain-on-worker rendered by default")
	}
}

// TestAdapterSidecar: enabled, the template adds the sidecar with its
// ports and probes, and its args run: the binary built from this
// repository starts with them (on loopback) and answers /healthz.
func TestAdapterSidecar(t *testing.T) {
	hint, httpPort := freePort(t), freePort(t)
	pod, err := renderWorker(t, map[string]any{
		"adapter": map[string]any{"enabled": true, "engine": "vllm", "engineURL": "http://127.0.0.1:8000",
			"model": "Qwen/Qwen3-8B", "hintPort": hint, "httpPort": httpPort, "enginePriority": 1000},
		"pin": map[string]any{"retainOnWorker": true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 2 || pod.Spec.Containers[1].Name != "hintstream-adapter" {
		t.Fatalf("containers %+v", pod.Spec.Containers)
	}
	c := pod.Spec.Containers[1]
	for flag, want := range map[string]string{"--bind": fmt.Sprintf("tcp://0.0.0.0:%d", hint), "--engine": "vllm",
		"--engine-url": "http://127.0.0.1:8000", "--model": "Qwen/Qwen3-8B", "--engine-priority": "1000",
		"--http-addr": fmt.Sprintf(":%d", httpPort)} {
		if got, _ := flagValue(c.Args, flag); got != want {
			t.Errorf("%s = %q, want %q (args %v)", flag, got, want, c.Args)
		}
	}
	if c.Args[0] != "adapter" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || len(c.Ports) != 2 || int(c.Ports[0].ContainerPort) != hint {
		t.Fatalf("sidecar %+v", c)
	}
	if _, ok := flagValue(render(t, map[string]any{"pin": map[string]any{"retainOnWorker": true}}).container(t).Args, "--retain-on-worker"); !ok {
		t.Fatal("pin.retainOnWorker renders no --retain-on-worker")
	}

	// Run the args as the kubelet would, on loopback only.
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		a = strings.Replace(a, "0.0.0.0", "127.0.0.1", 1)
		if strings.HasPrefix(a, ":") {
			a = "127.0.0.1" + a
		}
		args[i] = a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	listening := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "adapter listening") {
			listening = true
			break
		}
	}
	if !listening {
		t.Fatal("the sidecar's args did not start the adapter")
	}
	go func() { //nolint: drain the log so the process never blocks on it
		for sc.Scan() {
		}
	}()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", httpPort))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz %d", resp.StatusCode)
	}
}

// TestAdapterSidecarRefusesBadValues: the schema and the template refuse
// an engine the adapter does not speak and a missing engine URL.
func TestAdapterSidecarRefusesBadValues(t *testing.T) {
	for name, a := range map[string]map[string]any{
		"engine tgi":    {"enabled": true, "engine": "tgi"},
		"no engine URL": {"enabled": true, "engineURL": ""},
		"port 0":        {"enabled": true, "hintPort": 0},
	} {
		if _, err := renderWorker(t, map[string]any{"adapter": a}); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}
