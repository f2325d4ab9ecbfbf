package charttest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestNetworkPolicy checks the egress allowed: NATS, the hint port range,
// the pin endpoint's port and DNS, nothing else; ingress only to metrics.
func TestNetworkPolicy(t *testing.T) {
	r := render(t, parseValues(t, valueSets["creds+mtls+everything"]))
	np := r.NetworkPolicy
	if np == nil {
		t.Fatal("no NetworkPolicy")
	}
	if !labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(labels.Set(r.Deployment.Spec.Template.Labels)) {
		t.Errorf("NetworkPolicy selects %v, not the pods", np.Spec.PodSelector)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{"Ingress", "Egress"}) {
		t.Errorf("policyTypes %v", np.Spec.PolicyTypes)
	}
	type port struct {
		proto    string
		from, to int32
	}
	var got []port
	for _, rule := range np.Spec.Egress {
		for _, p := range rule.Ports {
			end := p.Port.IntVal
			if p.EndPort != nil {
				end = *p.EndPort
			}
			got = append(got, port{string(*p.Protocol), p.Port.IntVal, end})
		}
	}
	want := []port{{"TCP", 4222, 4222}, {"TCP", 5570, 5599}, {"TCP", 50052, 50052}, {"UDP", 53, 53}, {"TCP", 53, 53}}
	if !slices.Equal(got, want) {
		t.Errorf("egress ports %v, want %v", got, want)
	}
	if len(np.Spec.Egress[0].To) != 1 || np.Spec.Egress[0].To[0].PodSelector == nil {
		t.Errorf("NATS egress is not limited to the NATS pods: %+v", np.Spec.Egress[0].To)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntVal != 9191 {
		t.Errorf("ingress %+v, want the metrics port alone", np.Spec.Ingress)
	}
}

// TestDashboardCopy: the chart carries a copy of deploy/grafana/hintstream.json
// (Helm reads only files inside the chart, and a symlink out of it is
// refused by tools such as Argo CD); the copy must stay identical, and the
// ConfigMap must carry it whole under the sidecar's label.
func TestDashboardCopy(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "grafana", "hintstream.json"))
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(chartDir, "dashboards", "hintstream.json")
	cp, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(copyPath); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("%s must be a regular file, not a symlink", copyPath)
	}
	if !bytes.Equal(orig, cp) {
		t.Fatalf("%s differs from deploy/grafana/hintstream.json: run\n  cp deploy/grafana/hintstream.json deploy/helm/hintstream/dashboards/", copyPath)
	}
	r := render(t, parseValues(t, valueSets["dynamo-readme"]))
	cm := r.Dashboard
	if cm == nil {
		t.Fatal("no dashboard ConfigMap")
	}
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap labels %v lack grafana_dashboard: \"1\"", cm.Labels)
	}
	if strings.TrimSpace(cm.Data["hintstream.json"]) != strings.TrimSpace(string(orig)) {
		t.Error("the ConfigMap does not carry the dashboard whole")
	}
}

// TestLint runs Helm's own linter (`helm lint`) on the chart for every
// value set; a warning or an error fails.
func TestLint(t *testing.T) {
	for name, s := range valueSets {
		t.Run(name, func(t *testing.T) {
			l := lint.All(chartDir, parseValues(t, s), namespace, false)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				} else {
					t.Logf("helm lint: %s", m)
				}
			}
		})
	}
}

// TestStrictDecodeRejectsUnknownFields proves the decoder used above is
// strict: a misspelt field, a field of the wrong object, or an unexpected
// kind fails.
func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt":   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n",
		"misplaced":  "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 1, readinessProbe: {}}]}\n",
		"duplicate":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\ndata: {c: d}\n",
		"wrong kind": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\n",
		"wrong type": "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {maxUnavailable: [1]}\n",
	} {
		if err := (&rendered{manifestsByKind: map[string]string{}}).decode(name, doc); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	ok := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n"
	if err := (&rendered{manifestsByKind: map[string]string{}}).decode("ok", ok); err != nil {
		t.Errorf("a valid ConfigMap: %v", err)
	}
}
