package deploy

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// The release the examples assume: "inferwatch" in "monitoring", with the
// chart's ports, and the scale rule of ci/scale-values.yaml.
const (
	exampleService = "inferwatch.monitoring.svc"
	exampleRule    = "vllm-qwen-32b"
	exampleTarget  = "model_name=qwen2.5-32b-instruct"
)

// decodeExample decodes an example strictly into its type.
func decodeExample(t *testing.T, file string, obj any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("examples", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, obj); err != nil {
		t.Fatalf("examples/%s: %v", file, err)
	}
}

// TestScaledObjectExamples decodes the three ScaledObjects strictly into
// KEDA's types and checks each feed against the chart: the Deployment it
// scales, the Prometheus query (PromQL, on the scale gauges), the
// metrics-api URL (the chart's http port, the rule and target of
// ci/scale-values.yaml) and the external scaler's address (the grpc port).
func TestScaledObjectExamples(t *testing.T) {
	var vllm appsv1.Deployment
	decodeExample(t, "vllm-deployment.yaml", &vllm)
	values := readValues(t, filepath.Join(chartDir, "values.yaml"))
	ports := values["ports"].(map[string]any)
	scaleValues, err := os.ReadFile(filepath.Join(chartDir, "ci", "scale-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(scaleValues), "- name: "+exampleRule+"\n") {
		t.Fatalf("ci/scale-values.yaml has no scale rule %s", exampleRule)
	}
	feeds := map[string]string{
		"scaledobject-prometheus.yaml":  "prometheus",
		"scaledobject-metrics-api.yaml": "metrics-api",
		"scaledobject-external.yaml":    "external-push",
	}
	for file, kind := range feeds {
		t.Run(file, func(t *testing.T) {
			var so kedav1alpha1.ScaledObject
			decodeExample(t, file, &so)
			if so.Spec.ScaleTargetRef == nil || so.Spec.ScaleTargetRef.Name != vllm.Name || so.Namespace != vllm.Namespace {
				t.Errorf("scales %+v in %s, not the Deployment %s/%s", so.Spec.ScaleTargetRef, so.Namespace, vllm.Namespace, vllm.Name)
			}
			if so.Spec.Fallback == nil || so.Spec.Fallback.Replicas == 0 {
				t.Error("no fallback: a stale signal would hold the Deployment where it is")
			}
			if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != kind {
				t.Fatalf("triggers: want one %s, got %+v", kind, so.Spec.Triggers)
			}
			md := so.Spec.Triggers[0].Metadata
			switch kind {
			case "prometheus":
				expr, err := parser.NewParser(parser.Options{}).ParseExpr(md["query"])
				if err != nil {
					t.Fatalf("query is not PromQL: %v", err)
				}
				q := expr.String()
				for _, want := range []string{"inferwatch_scale_desired_replicas", "inferwatch_scale_valid_until_seconds", `rule="` + exampleRule + `"`} {
					if !strings.Contains(q, want) {
						t.Errorf("query %s lacks %s", q, want)
					}
				}
				if md["threshold"] != "1" || md["ignoreNullValues"] != "false" {
					t.Errorf("threshold %q, ignoreNullValues %q: want 1 and false", md["threshold"], md["ignoreNullValues"])
				}
			case "metrics-api":
				u, err := url.Parse(md["url"])
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf("%s:%v", exampleService, ports["http"]); u.Host != want {
					t.Errorf("url host %s, want %s", u.Host, want)
				}
				if want := "/keda/v1/targets/" + exampleRule + "/" + exampleTarget; u.Path != want {
					t.Errorf("url path %s, want %s", u.Path, want)
				}
				if md["valueLocation"] != "desired_replicas" || md["targetValue"] != "1" {
					t.Errorf("valueLocation %q, targetValue %q: want desired_replicas and 1", md["valueLocation"], md["targetValue"])
				}
			case "external-push":
				if want := fmt.Sprintf("%s:%v", exampleService, ports["grpc"]); md["scalerAddress"] != want {
					t.Errorf("scalerAddress %s, want %s", md["scalerAddress"], want)
				}
				if md["rule"] != exampleRule || md["target"] != exampleTarget {
					t.Errorf("rule %q target %q, want %s and %s", md["rule"], md["target"], exampleRule, exampleTarget)
				}
			}
		})
	}
}

// TestPrometheusRuleExample decodes the PrometheusRule strictly into
// prometheus-operator's type and runs promtool check rules on its groups.
func TestPrometheusRuleExample(t *testing.T) {
	var rule monitoringv1.PrometheusRule
	decodeExample(t, "prometheusrule.yaml", &rule)
	if len(rule.Spec.Groups) == 0 || len(rule.Spec.Groups[0].Rules) < 5 {
		t.Fatalf("want a group with the daemon's alerts, got %+v", rule.Spec.Groups)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: prometheus); .ci/run installs it")
	}
	b, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, b)
	}
	if !strings.Contains(string(out), fmt.Sprintf("%d rules found", len(rule.Spec.Groups[0].Rules))) {
		t.Errorf("promtool check rules: %s", out)
	}
}
