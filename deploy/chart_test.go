package deploy

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psa "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = "helm/inferwatch"
	releaseName = "iw"
	namespace   = "monitoring"
)

// kubeVersion is the cluster the chart is rendered and linted for.
var kubeVersion = &common.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}

// rendered is one rendering of the chart: its objects, decoded strictly,
// and NOTES.txt.
type rendered struct {
	deployment      *appsv1.Deployment
	configMap       *corev1.ConfigMap
	service         *corev1.Service
	serviceAccount  *corev1.ServiceAccount
	pvc             *corev1.PersistentVolumeClaim
	pdb             *policyv1.PodDisruptionBudget
	serviceMonitor  *monitoringv1.ServiceMonitor
	podMonitor      *monitoringv1.PodMonitor
	dashboard       *corev1.ConfigMap
	extraConfigMaps []*corev1.ConfigMap
	notes           string
}

// readValues merges the values files in order, as helm -f does.
func readValues(t *testing.T, files ...string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v, err := common.ReadValues(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		vals = util.MergeTables(v, vals)
	}
	return vals
}

// renderChart renders the chart as helm install does, the schema checked.
func renderChart(vals map[string]any) (map[string]string, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kubeVersion
	top, err := util.ToRenderValues(chrt, vals, common.ReleaseOptions{Name: releaseName, Namespace: namespace, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	return engine.Render(chrt, top)
}

// docSeparator splits a template's output into its YAML documents.
var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// decodeAll decodes every rendered object strictly into its type: a field
// the type does not have fails, naming it.
func decodeAll(t *testing.T, files map[string]string) *rendered {
	t.Helper()
	r := &rendered{}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			r.notes = files[name]
			continue
		}
		if strings.HasSuffix(name, ".tpl") {
			continue
		}
		for _, doc := range docSeparator.Split(files[name], -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			var obj any
			switch meta.Kind {
			case "Deployment":
				r.deployment = &appsv1.Deployment{}
				obj = r.deployment
			case "ConfigMap":
				cm := &corev1.ConfigMap{}
				obj = cm
				switch {
				case strings.HasSuffix(name, "/configmap.yaml"):
					r.configMap = cm
				case strings.HasSuffix(name, "/dashboard.yaml"):
					r.dashboard = cm
				default:
					r.extraConfigMaps = append(r.extraConfigMaps, cm)
				}
			case "Service":
				r.service = &corev1.Service{}
				obj = r.service
			case "ServiceAccount":
				r.serviceAccount = &corev1.ServiceAccount{}
				obj = r.serviceAccount
			case "PersistentVolumeClaim":
				r.pvc = &corev1.PersistentVolumeClaim{}
				obj = r.pvc
			case "PodDisruptionBudget":
				r.pdb = &policyv1.PodDisruptionBudget{}
				obj = r.pdb
			case "ServiceMonitor":
				r.serviceMonitor = &monitoringv1.ServiceMonitor{}
				obj = r.serviceMonitor
			case "PodMonitor":
				r.podMonitor = &monitoringv1.PodMonitor{}
				obj = r.podMonitor
			default:
				t.Fatalf("%s: a %s %q, which the test does not know: add its type", name, meta.APIVersion, meta.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s: %s: %v\n%s", name, meta.Kind, err, doc)
			}
		}
	}
	if r.deployment == nil || r.configMap == nil || r.service == nil {
		t.Fatalf("the chart rendered no Deployment, ConfigMap or Service: %v", names)
	}
	return r
}

// ciValues are the tested combinations of values.
func ciValues(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s/ci/*-values.yaml: %v", chartDir, err)
	}
	return files
}

// TestChartRendersEveryCIValuesFile renders the chart for each
// ci/*-values.yaml, decodes every object strictly into its Kubernetes type
// and checks what a cluster would otherwise find out: the pod against the
// restricted Pod Security Standard, its probes and ports, the selectors of
// the Service, monitors and PDB, the configuration's checksum, the secrets
// the configuration reads.
func TestChartRendersEveryCIValuesFile(t *testing.T) {
	for _, file := range ciValues(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			vals := readValues(t, file)
			files, err := renderChart(vals)
			if err != nil {
				t.Fatal(err)
			}
			r := decodeAll(t, files)
			checkPod(t, r)
			checkSelectors(t, r)
			checkChecksum(t, r)
			checkSecretsMounted(t, r)
			if !strings.Contains(r.notes, "inferwatch tail") {
				t.Errorf("NOTES.txt does not say how to see the findings:\n%s", r.notes)
			}
		})
	}
}

func checkPod(t *testing.T, r *rendered) {
	t.Helper()
	pod := r.deployment.Spec.Template
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	results := evaluator.EvaluatePod(psa.LevelVersion{Level: psa.LevelRestricted, Version: psa.LatestVersion()}, &pod.ObjectMeta, &pod.Spec)
	for _, res := range results {
		if !res.Allowed {
			t.Errorf("restricted Pod Security Standard: %s: %s", res.ForbiddenReason, res.ForbiddenDetail)
		}
	}
	if len(pod.Spec.Containers) == 0 || pod.Spec.Containers[0].Name != "inferwatch" {
		t.Fatalf("the first container is not inferwatch: %+v", pod.Spec.Containers)
	}
	c := pod.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the root file system is not read-only")
	}
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Error("the container does not run as uid 65532, the image's user")
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token it has no use for")
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] == 0 || ports["grpc"] == 0 {
		t.Errorf("ports: want http and grpc, got %v", ports)
	}
	probe := func(what string, p *corev1.Probe, path string) {
		t.Helper()
		switch {
		case p == nil || p.HTTPGet == nil:
			t.Errorf("%s probe: want an HTTP GET of %s", what, path)
		case p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "http":
			t.Errorf("%s probe: want GET %s on port http, got %s on %s", what, path, p.HTTPGet.Path, p.HTTPGet.Port.String())
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	probe("startup", c.StartupProbe, "/healthz")
	if s := c.StartupProbe; s != nil {
		// The daemon retries NATS for up to 2 minutes (--nats.connect-timeout)
		// before it serves: the startup probe must wait longer than that.
		if budget := s.PeriodSeconds * s.FailureThreshold; budget <= 120 {
			t.Errorf("startup probe allows %d s, not more than the 120 s NATS is retried at start", budget)
		}
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{
		"--config=/etc/inferwatch/inferwatch.yml",
		fmt.Sprintf("--web.listen-address=0.0.0.0:%d", ports["http"]),
		fmt.Sprintf("--keda.listen-address=0.0.0.0:%d", ports["grpc"]),
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, dir := range []string{"/etc/inferwatch", "/var/lib/inferwatch", "/tmp"} {
		if mounts[dir] == "" {
			t.Errorf("nothing is mounted at %s (the root file system is read-only)", dir)
		}
	}
	if r.deployment.Spec.Replicas != nil && *r.deployment.Spec.Replicas > 1 && r.deployment.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		t.Error("several replicas with the Recreate strategy")
	}
}

func checkSelectors(t *testing.T, r *rendered) {
	t.Helper()
	podLabels := r.deployment.Spec.Template.Labels
	matches := func(what string, sel map[string]string) {
		t.Helper()
		if len(sel) == 0 {
			t.Errorf("%s: empty selector", what)
		}
		for k, v := range sel {
			if podLabels[k] != v {
				t.Errorf("%s selects %s=%s, which the pod's labels %v lack", what, k, v, podLabels)
			}
		}
	}
	matches("Deployment", r.deployment.Spec.Selector.MatchLabels)
	matches("Service", r.service.Spec.Selector)
	svcPorts := map[string]string{}
	for _, p := range r.service.Spec.Ports {
		svcPorts[p.Name] = p.TargetPort.String()
	}
	if svcPorts["http"] != "http" || svcPorts["grpc"] != "grpc" {
		t.Errorf("Service ports: want http and grpc to the pod's ports of those names, got %v", svcPorts)
	}
	if r.pdb != nil {
		matches("PodDisruptionBudget", r.pdb.Spec.Selector.MatchLabels)
	}
	if m := r.serviceMonitor; m != nil {
		for k, v := range m.Spec.Selector.MatchLabels {
			if r.service.Labels[k] != v {
				t.Errorf("ServiceMonitor selects %s=%s, which the Service's labels %v lack", k, v, r.service.Labels)
			}
		}
		if len(m.Spec.Endpoints) != 1 || m.Spec.Endpoints[0].Port != "http" || m.Spec.Endpoints[0].Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoints: want port http, /metrics; got %+v", m.Spec.Endpoints)
		}
	}
	if m := r.podMonitor; m != nil {
		matches("PodMonitor", m.Spec.Selector.MatchLabels)
		if len(m.Spec.PodMetricsEndpoints) != 1 || m.Spec.PodMetricsEndpoints[0].Port == nil || *m.Spec.PodMetricsEndpoints[0].Port != "http" {
			t.Errorf("PodMonitor endpoints: want port http; got %+v", m.Spec.PodMetricsEndpoints)
		}
	}
	if r.pvc != nil {
		found := false
		for _, v := range r.deployment.Spec.Template.Spec.Volumes {
			found = found || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == r.pvc.Name)
		}
		if !found {
			t.Errorf("the PersistentVolumeClaim %s is not a volume of the pod", r.pvc.Name)
		}
	}
	if sa := r.serviceAccount; sa != nil && r.deployment.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Errorf("the pod runs as service account %q, the chart creates %q", r.deployment.Spec.Template.Spec.ServiceAccountName, sa.Name)
	}
}

// checkChecksum checks that the pod's checksum/config is that of the
// configuration in the ConfigMap, so that a changed configuration rolls it.
func checkChecksum(t *testing.T, r *rendered) {
	t.Helper()
	sum := r.deployment.Spec.Template.Annotations["checksum/config"]
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sum) {
		t.Fatalf("checksum/config annotation: want a sha256, got %q", sum)
	}
	cfg := r.configMap.Data["inferwatch.yml"]
	if cfg == "" {
		t.Fatal("the ConfigMap has no inferwatch.yml")
	}
	if got := fmt.Sprintf("%x", sha256.Sum256([]byte(strings.TrimSuffix(cfg, "\n")))); got != sum {
		t.Errorf("checksum/config is %s, the ConfigMap's inferwatch.yml hashes to %s", sum, got)
	}
}

// checkSecretsMounted checks that every file the configuration reads lies
// in a mounted Secret volume of the pod.
func checkSecretsMounted(t *testing.T, r *rendered) {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(r.configMap.Data["inferwatch.yml"]), &cfg); err != nil {
		t.Fatalf("inferwatch.yml: %v", err)
	}
	secretVolumes := map[string]string{}
	for _, v := range r.deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secretVolumes[v.Name] = v.Secret.SecretName
		}
	}
	mounted := map[string]string{}
	for _, m := range r.deployment.Spec.Template.Spec.Containers[0].VolumeMounts {
		if secret, ok := secretVolumes[m.Name]; ok {
			mounted[m.MountPath] = secret
		}
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(path+"."+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), x)
			}
		case string:
			if !strings.HasSuffix(path, "_file") {
				return
			}
			if mounted[filepath.Dir(v)] == "" {
				t.Errorf("config %s = %s: no Secret is mounted at %s (mounted: %v)", path[1:], v, filepath.Dir(v), mounted)
			}
		}
	}
	walk("", cfg)
}

// TestChartConfigPassesTheDaemonsCheck runs the configuration each ci
// values file renders through the real binary's check, which reads the
// credential files it names: they are written where the pod mounts them,
// under a temporary root.
func TestChartConfigPassesTheDaemonsCheck(t *testing.T) {
	bin := inferwatchBinary(t)
	for _, file := range ciValues(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			files, err := renderChart(readValues(t, file))
			if err != nil {
				t.Fatal(err)
			}
			r := decodeAll(t, files)
			out, err := checkConfig(t, bin, r.configMap.Data["inferwatch.yml"])
			if err != nil {
				t.Fatalf("inferwatch check: %v\n%s", err, out)
			}
		})
	}
}

// TestChartLintStrict runs helm lint --strict over the chart with each ci
// values file: no error and no warning.
func TestChartLintStrict(t *testing.T) {
	for _, file := range ciValues(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			res := lint(t, readValues(t, file))
			for _, m := range res.Messages {
				t.Logf("%v", m)
			}
			if len(res.Errors) > 0 {
				t.Errorf("helm lint --strict: %v", res.Errors)
			}
		})
	}
}

func lint(t *testing.T, vals map[string]any) *action.LintResult {
	t.Helper()
	l := action.NewLint()
	l.Strict = true
	l.Namespace = namespace
	l.KubeVersion = kubeVersion
	return l.Run([]string{chartDir}, vals)
}

// TestChartRefuses checks that what cannot work fails: a misspelt key or
// a wrong type fails helm lint --strict and helm install, naming the key
// (values.schema.json); a combination that cannot work fails helm install
// with a message saying why (helm lint only logs a template's fail).
func TestChartRefuses(t *testing.T) {
	f := func(name, values string, schema bool, want ...string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			var vals map[string]any
			if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
				t.Fatal(err)
			}
			if schema {
				res := lint(t, vals)
				msgs := make([]string, 0, len(res.Errors))
				for _, err := range res.Errors {
					msgs = append(msgs, err.Error())
				}
				all := strings.Join(msgs, "\n")
				for _, w := range want {
					if !strings.Contains(all, w) {
						t.Errorf("helm lint --strict: want an error containing %q, got:\n%s", w, all)
					}
				}
			}
			_, err := renderChart(vals)
			if err == nil {
				t.Fatal("helm install would render it")
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("helm install: want an error containing %q, got: %v", w, err)
				}
			}
		})
	}
	f("misspelt key", "replicaCout: 1", true, "replicaCout", "additional properties")
	f("misspelt nested key", "persistence: {enable: true}", true, "enable", "persistence")
	f("wrong type", "replicaCount: one", true, "replicaCount", "integer")
	f("wrong type nested", "serviceMonitor: {enabled: \"yes\"}", true, "serviceMonitor", "enabled", "boolean")
	f("unknown config section", "config: {source: {url: 'http://vm:8428'}, groups: [{name: g}], alerts: {}}", true, "config", "alerts")
	f("several replicas on the embedded NATS", "replicaCount: 2", false,
		"replicaCount is 2 but nats.url is empty", "Set nats.url to an external NATS")
	f("several replicas on one claim", "replicaCount: 2\nnats: {url: 'nats://nats:4222'}\npersistence: {enabled: true}", false,
		"replicaCount is 2 with persistence.enabled", "an outbox of its own")
	f("a lease TTL that is no duration", "nats: {leaseTTL: soon}", true, "leaseTTL")
	f("both monitors", "serviceMonitor: {enabled: true}\npodMonitor: {enabled: true}", false, "scrape every pod twice")
	f("two ways to the store", "store: {bearerTokenSecret: {name: a}, basicAuth: {username: u, passwordSecret: {name: b}}}", false, "one way to authenticate")
}

// TestChartReplicasShareGroups: the replicas on an external NATS get the
// lease settings in their configuration, and a heartbeat left empty is
// left to the daemon.
func TestChartReplicasShareGroups(t *testing.T) {
	vals := readValues(t, filepath.Join(chartDir, "ci", "external-nats-values.yaml"))
	vals["nats"].(map[string]any)["leaseTTL"] = "6s"
	files, err := renderChart(vals)
	if err != nil {
		t.Fatal(err)
	}
	r := decodeAll(t, files)
	var cfg struct {
		NATS map[string]any `json:"nats"`
	}
	if err := yaml.Unmarshal([]byte(r.configMap.Data["inferwatch.yml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.NATS["lease_ttl"] != "6s" || cfg.NATS["heartbeat"] != nil || cfg.NATS["stream_replicas"] != float64(3) {
		t.Errorf("nats section: %v; want lease_ttl 6s, no heartbeat, stream_replicas 3", cfg.NATS)
	}
	if n := *r.deployment.Spec.Replicas; n != 3 {
		t.Errorf("%d replicas, want 3", n)
	}
}

// TestDefaultValuesFileIsTheDefault checks that ci/default-values.yaml
// changes nothing, so the default rendering is what the test checks.
func TestDefaultValuesFileIsTheDefault(t *testing.T) {
	a, err := renderChart(readValues(t, filepath.Join(chartDir, "ci", "default-values.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := renderChart(map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range b {
		if a[k] != b[k] {
			t.Errorf("%s differs between ci/default-values.yaml and no values", k)
		}
	}
	if !slices.Equal(sortedKeys(a), sortedKeys(b)) {
		t.Errorf("templates differ: %v against %v", sortedKeys(a), sortedKeys(b))
	}
	if !bytes.Contains([]byte(b["inferwatch/templates/configmap.yaml"]), []byte("preset: vllm")) {
		t.Error("the default configuration does not use the vllm preset")
	}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
