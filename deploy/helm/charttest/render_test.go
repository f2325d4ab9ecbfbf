package charttest

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart under test, relative to this package.
var chartDir = filepath.Join("..", "hintstream")

const (
	releaseName = "prod"
	namespace   = "inference"
)

// rendered is one chart rendering, every object decoded strictly.
type rendered struct {
	Deployment      *appsv1.Deployment
	Service         *corev1.Service
	ServiceAccount  *corev1.ServiceAccount
	PDB             *policyv1.PodDisruptionBudget
	Dashboard       *corev1.ConfigMap
	NetworkPolicy   *networkingv1.NetworkPolicy
	ServiceMonitor  *monitoringv1.ServiceMonitor
	Notes           string
	objects         int
	manifestsByKind map[string]string
}

// kinds maps each apiVersion/kind the chart may render to the type it must
// decode into; anything else is an error.
var kinds = map[string]func(r *rendered) any{
	"apps/v1/Deployment": func(r *rendered) any { r.Deployment = &appsv1.Deployment{}; return r.Deployment },
	"v1/Service":         func(r *rendered) any { r.Service = &corev1.Service{}; return r.Service },
	"v1/ServiceAccount":  func(r *rendered) any { r.ServiceAccount = &corev1.ServiceAccount{}; return r.ServiceAccount },
	"policy/v1/PodDisruptionBudget": func(r *rendered) any {
		r.PDB = &policyv1.PodDisruptionBudget{}
		return r.PDB
	},
	"v1/ConfigMap": func(r *rendered) any { r.Dashboard = &corev1.ConfigMap{}; return r.Dashboard },
	"networking.k8s.io/v1/NetworkPolicy": func(r *rendered) any {
		r.NetworkPolicy = &networkingv1.NetworkPolicy{}
		return r.NetworkPolicy
	},
	"monitoring.coreos.com/v1/ServiceMonitor": func(r *rendered) any {
		r.ServiceMonitor = &monitoringv1.ServiceMonitor{}
		return r.ServiceMonitor
	},
}

// render renders the chart as `helm template` would (the chart's
// values.yaml under vals, its values schema checked, Strict so that a
// template reading a value the chart does not define fails) and decodes
// each object with sigs.k8s.io/yaml's UnmarshalStrict: an unknown or
// duplicate field is an error, so is a kind the chart should not render.
func render(t *testing.T, vals map[string]any) *rendered {
	t.Helper()
	r, err := tryRender(vals)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func tryRender(vals map[string]any) (*rendered, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	values, err := chartutil.ToRenderValues(chrt, vals,
		chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: true, Revision: 1},
		chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Engine{Strict: true}.Render(chrt, values)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	r := &rendered{manifestsByKind: map[string]string{}}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		body := files[name]
		if strings.HasSuffix(name, "NOTES.txt") {
			r.Notes = body
			continue
		}
		if strings.HasPrefix(filepath.Base(name), "_") {
			continue
		}
		for _, doc := range releaseutil.SplitManifests(body) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			if err := r.decode(name, doc); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

func (r *rendered) decode(file, doc string) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
		return fmt.Errorf("%s: not YAML: %w\n%s", file, err, doc)
	}
	key := tm.APIVersion + "/" + tm.Kind
	newObj, ok := kinds[key]
	if !ok {
		return fmt.Errorf("%s: unexpected object %s", file, key)
	}
	if _, dup := r.manifestsByKind[tm.Kind]; dup {
		return fmt.Errorf("%s: a second %s", file, tm.Kind)
	}
	if err := yaml.UnmarshalStrict([]byte(doc), newObj(r)); err != nil {
		return fmt.Errorf("%s: %s does not decode strictly: %w\n%s", file, key, err, doc)
	}
	r.manifestsByKind[tm.Kind] = doc
	r.objects++
	return nil
}

// container is the hintstream container of the Deployment.
func (r *rendered) container(t *testing.T) corev1.Container {
	t.Helper()
	if r.Deployment == nil {
		t.Fatal("no Deployment rendered")
	}
	cs := r.Deployment.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "hintstream" {
		t.Fatalf("want one container named hintstream, got %d", len(cs))
	}
	return cs[0]
}

// flagValue is the argument after flag in args, and whether flag is there.
func flagValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if a == flag {
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", true
		}
	}
	return "", false
}
