package charttest

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// valueSets are the configurations every structural test renders: the
// defaults, each NATS authentication method, TLS with and without client
// certificates, every optional object on, and the Dynamo example of the
// README.
var valueSets = map[string]string{
	"defaults": ``,
	"creds+mtls+everything": `
replicaCount: 3
group: prod-hints
nats:
  urls: [tls://nats-0.nats:4222, tls://nats-1.nats:4222]
  auth: {type: creds, existingSecret: nats-creds, credsKey: hintstream.creds}
  tls: {enabled: true, existingSecret: nats-client-tls, clientCert: true, serverName: nats.inference.svc}
streams:
  requests: {name: REQS, subjects: [frontend.requests.>]}
  responses: {name: RESPS, subjects: [frontend.responses.>]}
  kvEvents: {name: KV, subjects: [kv.events.>, dynamo.kv.>]}
  load: {name: LOAD, subjects: [kv.load.>]}
  deadLetter: {name: DLQ, prefix: hints.dlq}
  update: true
  replicas: 3
dynamo: {namespace: dynamo, component: backend}
pin: {endpoint: "tcp://mooncake-master:50052"}
log: {format: text, level: debug}
http: {port: 9191}
shutdownTimeoutSeconds: 15
terminationGracePeriodSeconds: 45
extraArgs: [--overlap-score-weight, "1.5", --index-max-blocks, "5000000"]
extraEnv: [{name: GOMEMLIMIT, value: 900MiB}]
serviceMonitor: {enabled: true, labels: {release: kube-prometheus-stack}}
grafanaDashboard: {enabled: true, annotations: {grafana_folder: hintstream}}
networkPolicy:
  enabled: true
  nats: {to: [{podSelector: {matchLabels: {app.kubernetes.io/name: nats}}}]}
  metricsFrom: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]
`,
	"nkey+ca": `
nats:
  auth: {type: nkey, existingSecret: nats-nkey, nkeyKey: seed.nk}
  tls: {enabled: true, existingSecret: nats-client-tls}
`,
	"userPassword": `
nats:
  auth: {type: userPassword, existingSecret: nats-password, userKey: username, passwordKey: pw}
`,
	"token+system-roots": `
nats:
  urls: [tls://nats.example.internal:4222]
  auth: {type: token, existingSecret: nats-token}
  tls: {enabled: true, caKey: "", serverName: nats.example.internal}
networkPolicy: {enabled: true}
`,
	"dynamo-readme": `
nats:
  urls: [nats://dynamo-platform-nats.dynamo-system:4222]
dynamo: {namespace: dynamo, component: backend}
pin: {endpoint: "tcp://mooncake-master.dynamo-system:50052"}
serviceMonitor: {enabled: true}
grafanaDashboard: {enabled: true}
`,
}

// optional lists the optional objects each value set turns on.
var optional = map[string][]string{
	"creds+mtls+everything": {"ServiceMonitor", "ConfigMap", "NetworkPolicy"},
	"token+system-roots":    {"NetworkPolicy"},
	"dynamo-readme":         {"ServiceMonitor", "ConfigMap"},
}

func parseValues(t *testing.T, s string) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("test values: %v", err)
	}
	return v
}

func forEachSet(t *testing.T, f func(t *testing.T, vals map[string]any, r *rendered)) {
	for name, s := range valueSets {
		t.Run(name, func(t *testing.T) {
			vals := parseValues(t, s)
			f(t, vals, render(t, vals))
		})
	}
}

// TestRenderStrict renders every value set; render fails on an object that
// does not decode strictly into its k8s.io/api (or Prometheus Operator)
// type. Each set also gets exactly the optional objects it asks for.
func TestRenderStrict(t *testing.T) {
	forEachSet(t, func(t *testing.T, vals map[string]any, r *rendered) {
		want := map[string]bool{"Deployment": true, "Service": true, "ServiceAccount": true, "PodDisruptionBudget": true}
		for _, kind := range optional[setName(t)] {
			want[kind] = true
		}
		for kind := range kinds {
			kind = kind[strings.LastIndex(kind, "/")+1:]
			if !want[kind] {
				want[kind] = false
			}
		}
		for kind, w := range want {
			if _, got := r.manifestsByKind[kind]; got != w {
				t.Errorf("%s rendered: %v, want %v", kind, got, w)
			}
		}
		for kind, doc := range r.manifestsByKind {
			var m struct {
				Metadata struct {
					Name   string            `json:"name"`
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatal(err)
			}
			if errs := validation.IsDNS1123Subdomain(m.Metadata.Name); len(errs) > 0 {
				t.Errorf("%s name %q: %v", kind, m.Metadata.Name, errs)
			}
			for k, v := range m.Metadata.Labels {
				if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
					t.Errorf("%s label %s=%s: %v", kind, k, v, errs)
				}
			}
		}
		if !strings.Contains(r.Notes, "rollout status") {
			t.Errorf("NOTES.txt not rendered: %q", r.Notes)
		}
	})
}

// setName is the value set a forEachSet subtest runs.
func setName(t *testing.T) string {
	return t.Name()[strings.LastIndex(t.Name(), "/")+1:]
}

// TestDeploymentContract checks what the issue asks of the Deployment:
// probes on the --http-addr port, a non-root read-only container, a grace
// period longer than --shutdown-timeout, selectors that select the pods.
func TestDeploymentContract(t *testing.T) {
	forEachSet(t, func(t *testing.T, vals map[string]any, r *rendered) {
		d := r.Deployment
		c := r.container(t)
		pod := d.Spec.Template.Spec

		addr, ok := flagValue(c.Args, "--http-addr")
		if !ok || len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || addr != ":"+itoa(c.Ports[0].ContainerPort) {
			t.Fatalf("--http-addr %q and container ports %+v disagree", addr, c.Ports)
		}
		probe := func(name string, p *corev1.Probe, path string) {
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port != intstr.FromString("metrics") {
				t.Errorf("%s probe: want GET %s on the metrics port, got %+v", name, path, p)
			}
		}
		probe("readiness", c.ReadinessProbe, "/readyz")
		probe("liveness", c.LivenessProbe, "/healthz")
		probe("startup", c.StartupProbe, "/healthz")

		psc, sc := pod.SecurityContext, c.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Errorf("pod does not run as a non-root user: %+v", psc)
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("root filesystem is writable: %+v", sc)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("container may escalate or keeps capabilities: %+v", sc)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Error("the pod mounts a service account token it never uses")
		}

		st, ok := flagValue(c.Args, "--shutdown-timeout")
		shutdown, err := time.ParseDuration(st)
		if !ok || err != nil {
			t.Fatalf("--shutdown-timeout %q: %v", st, err)
		}
		if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= shutdown {
			t.Errorf("terminationGracePeriodSeconds %v is not longer than --shutdown-timeout %v", g, shutdown)
		}

		podLabels := labels.Set(d.Spec.Template.Labels)
		if sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels); d.Spec.Selector.MatchLabels == nil || !sel.Matches(podLabels) {
			t.Errorf("Deployment selector %v does not select its pods %v", d.Spec.Selector, podLabels)
		}
		if n, ok := flagValue(c.Args, "--group"); !ok || n == "" {
			t.Error("no --group")
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("replicas %v: a group needs two members to survive an eviction", d.Spec.Replicas)
		}
		if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
			t.Errorf("a rolling update may shrink the group: %+v", d.Spec.Strategy)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("resources: %+v", c.Resources)
		}

		// The metrics Service selects the pods and keeps members that are
		// still catching up.
		s := r.Service
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) || len(s.Spec.Selector) == 0 {
			t.Errorf("Service selector %v does not select the pods", s.Spec.Selector)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "metrics" || s.Spec.Ports[0].TargetPort != intstr.FromString("metrics") {
			t.Errorf("Service ports %+v", s.Spec.Ports)
		}
		if !s.Spec.PublishNotReadyAddresses {
			t.Error("Service hides members that are not ready from the scrape")
		}
		if r.ServiceAccount == nil || pod.ServiceAccountName != r.ServiceAccount.Name {
			t.Errorf("pod service account %q is not the one rendered", pod.ServiceAccountName)
		}

		// The group survives voluntary evictions: at least one member stays.
		p := r.PDB
		if !labels.SelectorFromSet(p.Spec.Selector.MatchLabels).Matches(podLabels) || len(p.Spec.Selector.MatchLabels) == 0 {
			t.Errorf("PDB selector %v does not select the pods", p.Spec.Selector)
		}
		if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() < 1 || p.Spec.MaxUnavailable.IntValue() >= int(*d.Spec.Replicas) {
			t.Errorf("PDB maxUnavailable %v with %d replicas: the group would not survive (or a drain would block)", p.Spec.MaxUnavailable, *d.Spec.Replicas)
		}

		if sm := r.ServiceMonitor; sm != nil {
			if !labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(s.Labels)) {
				t.Errorf("ServiceMonitor selector %v does not select the Service %v", sm.Spec.Selector, s.Labels)
			}
			if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
				t.Errorf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
			}
		}
	})
}

func itoa(n int32) string {
	b, _ := yaml.Marshal(n)
	return strings.TrimSpace(string(b))
}

// TestCheckConfig runs every value set's container command through the
// binary's --check-config.
func TestCheckConfig(t *testing.T) {
	sec := newSecrets(t)
	forEachSet(t, func(t *testing.T, vals map[string]any, r *rendered) {
		checkConfig(t, r, sec)
	})
}

// TestArgsFollowValues checks that the values reach the command line, and
// that unset values render no flag (so the binary's defaults apply).
func TestArgsFollowValues(t *testing.T) {
	defaults := render(t, nil).container(t).Args
	for _, f := range []string{"--nats-creds", "--nats-nkey", "--nats-tls-ca", "--pin-endpoint", "--dynamo-namespace",
		"--dynamo-component", "--stream-replicas", "--requests-stream", "--update-streams", "--dead-letter-prefix"} {
		if _, ok := flagValue(defaults, f); ok {
			t.Errorf("defaults render %s", f)
		}
	}
	if len(render(t, nil).Deployment.Spec.Template.Spec.Containers[0].Env) != 0 {
		t.Error("defaults set environment variables")
	}

	r := render(t, parseValues(t, valueSets["creds+mtls+everything"]))
	args := r.container(t).Args
	want := map[string]string{
		"--nats-url":             "tls://nats-0.nats:4222,tls://nats-1.nats:4222",
		"--group":                "prod-hints",
		"--http-addr":            ":9191",
		"--log-format":           "text",
		"--log-level":            "debug",
		"--shutdown-timeout":     "15s",
		"--nats-creds":           "/etc/hintstream/nats-auth/hintstream.creds",
		"--nats-tls-ca":          "/etc/hintstream/nats-tls/ca.crt",
		"--nats-tls-cert":        "/etc/hintstream/nats-tls/tls.crt",
		"--nats-tls-key":         "/etc/hintstream/nats-tls/tls.key",
		"--nats-tls-server-name": "nats.inference.svc",
		"--requests-stream":      "REQS",
		"--requests-subjects":    "frontend.requests.>",
		"--responses-stream":     "RESPS",
		"--kv-events-subjects":   "kv.events.>,dynamo.kv.>",
		"--load-stream":          "LOAD",
		"--dead-letter-stream":   "DLQ",
		"--dead-letter-prefix":   "hints.dlq",
		"--stream-replicas":      "3",
		"--dynamo-namespace":     "dynamo",
		"--dynamo-component":     "backend",
		"--pin-endpoint":         "tcp://mooncake-master:50052",
		"--overlap-score-weight": "1.5",
	}
	for f, v := range want {
		if got, ok := flagValue(args, f); !ok || got != v {
			t.Errorf("%s: got %q (present %v), want %q", f, got, ok, v)
		}
	}
	if !slices.Contains(args, "--update-streams") {
		t.Error("no --update-streams")
	}
	if g := *r.Deployment.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 45 {
		t.Errorf("terminationGracePeriodSeconds %d, want the 45 given", g)
	}

	for set, env := range map[string][]string{
		"userPassword":       {"HINTSTREAM_NATS_USER", "HINTSTREAM_NATS_PASSWORD"},
		"token+system-roots": {"HINTSTREAM_NATS_TOKEN"},
	} {
		c := render(t, parseValues(t, valueSets[set])).container(t)
		var names []string
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s: env %s is not read from a Secret", set, e.Name)
			}
			names = append(names, e.Name)
		}
		if !slices.Equal(names, env) {
			t.Errorf("%s: env %v, want %v", set, names, env)
		}
		for _, a := range c.Args {
			if strings.Contains(a, "s3cret") || strings.Contains(a, "t0ken") {
				t.Errorf("%s: a secret on the command line", set)
			}
		}
	}
}

// TestBadValuesFail checks that values the binary would reject, or that
// would cut shutdown short, fail at install time with a clear message.
func TestBadValuesFail(t *testing.T) {
	for name, c := range map[string]struct{ values, want string }{
		"grace not longer than shutdown": {"shutdownTimeoutSeconds: 30\nterminationGracePeriodSeconds: 30", "must be longer than shutdownTimeoutSeconds"},
		"auth without a Secret":          {"nats: {auth: {type: creds}}", "name the Secret"},
		"unknown auth type":              {"nats: {auth: {type: jwt, existingSecret: s}}", "/nats/auth/type"},
		"no NATS URL":                    {"nats: {urls: []}", "at least one URL"},
		"client cert without a Secret":   {"nats: {tls: {enabled: true, clientCert: true}}", "name the Secret"},
		"TLS that sets no TLS flag":      {"nats: {tls: {enabled: true, caKey: \"\"}}", "would connect in plain text"},
		"misspelt value (schema)":        {"replicas: 3", "replicas"},
		"unknown log format (schema)":    {"log: {format: logfmt}", "log"},
		"pin port unknown":               {"pin: {endpoint: ipc:///run/pin}\nnetworkPolicy: {enabled: true}", "networkPolicy.pin.port"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tryRender(parseValues(t, c.values))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
