package charttest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/strvals"
)

// TestReadmeInstall takes the `helm install` of docs/deploy.md, applies
// its --set arguments as helm does (strvals), and renders and checks the
// result, so the documented command keeps working.
func TestReadmeInstall(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "helm install ")
	if start < 0 {
		t.Fatal("docs/deploy.md shows no helm install")
	}
	end := strings.Index(readme[start:], "\n```")
	cmd := strings.ReplaceAll(readme[start:start+end], "\\\n", " ")
	if !strings.Contains(cmd, "deploy/helm/hintstream") {
		t.Fatalf("docs/deploy.md's helm install does not install deploy/helm/hintstream: %s", cmd)
	}
	vals := map[string]any{}
	sets := regexp.MustCompile(`--set '?([^' ]+)'?`).FindAllStringSubmatch(cmd, -1)
	if len(sets) < 4 {
		t.Fatalf("docs/deploy.md's helm install sets %d values: %s", len(sets), cmd)
	}
	for _, m := range sets {
		if err := strvals.ParseInto(m[1], vals); err != nil {
			t.Fatalf("--set %s: %v", m[1], err)
		}
	}
	r := render(t, vals)
	args := r.container(t).Args
	for _, f := range []string{"--nats-url", "--dynamo-namespace", "--pin-endpoint"} {
		if _, ok := flagValue(args, f); !ok {
			t.Errorf("docs/deploy.md's install renders no %s: %v", f, args)
		}
	}
	if r.ServiceMonitor == nil || r.Dashboard == nil {
		t.Error("docs/deploy.md's install enables the ServiceMonitor and the dashboard, but they are not rendered")
	}
	checkConfig(t, r, newSecrets(t))
}
