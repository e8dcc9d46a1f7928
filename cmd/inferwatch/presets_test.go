package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/nats-io/nats.go"

	"github.com/inferwatch/inferwatch/alerting/natstest"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

func TestCheckAcceptsThePresetsExample(t *testing.T) {
	code, out, errOut := runCmd(t, context.Background(), "check", "--config", "../../examples/presets.yml")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "valid: 1 groups, 11 rules") {
		t.Fatalf("stdout %q", out)
	}
}

// presetsConfig is a configuration made of presets only, for the fleet.
const presetsConfig = `source:
  url: http://127.0.0.1:8428
groups:
  - name: fleet
    preset: [vllm, dcgm]
    selector: '{namespace="inference"}'
    by: [model, pod]
`

// ruleQueries returns the queries rule r runs: its expression, or a
// correlation's two.
func ruleQueries(r rulefmt.Rule) []string {
	if c, ok := r.Spec.(*rulefmt.Correlate); ok {
		return []string{c.X, c.Y}
	}
	return []string{r.Expr}
}

// metricNames returns the metric names a query selects.
func metricNames(t *testing.T, q string) []string {
	t.Helper()
	e, err := metricsql.Parse(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var names []string
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		if me, ok := x.(*metricsql.MetricExpr); ok {
			for _, lfs := range me.LabelFilterss {
				for _, lf := range lfs {
					if lf.Label == "__name__" && !slices.Contains(names, lf.Value) {
						names = append(names, lf.Value)
					}
				}
			}
		}
	})
	return names
}

// The vllm and dcgm presets find the fleet's series and its latency spikes, and nothing fires on the quiet model.
func TestPresetsOnTheFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics and NATS")
	}
	ctx := context.Background()
	end := fleetEnd(t, quietWeekEnd)
	vm, f := backfillFleet(t, end)

	file := filepath.Join(t.TempDir(), "presets.yml")
	if err := os.WriteFile(file, []byte(presetsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := rulefmt.Load(file)
	if err != nil {
		t.Fatal(err)
	}

	// Every preset query returns one series per pod, except the rules
	// whose metrics the fleet does not generate: those are named here so
	// that none matches nothing silently.
	client, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL()})
	if err != nil {
		t.Fatal(err)
	}
	at := f.End()
	inFleet, err := storeMetricNames(vm.URL(), at)
	if err != nil {
		t.Fatal(err)
	}
	if !inFleet["vllm:time_to_first_token_seconds_sum"] || !inFleet["DCGM_FI_DEV_GPU_UTIL"] {
		t.Fatalf("the store lacks the fleet's metrics: %v", inFleet)
	}
	pods := 0
	for _, m := range f.Models {
		pods += len(m.Pods)
	}
	var absent []string
	presetRules := map[string]bool{}
	for _, r := range cfg.Groups[0].Rules {
		presetRules[r.Name] = true
		for _, q := range ruleQueries(r) {
			found := false
			for _, n := range metricNames(t, q) {
				found = found || inFleet[n]
			}
			if !found {
				absent = append(absent, r.Name)
				continue
			}
			series, err := client.QueryRange(ctx, q, at.Add(-time.Hour), at, r.Step)
			if err != nil {
				t.Fatalf("rule %s: %v", r.Name, err)
			}
			if len(series) != pods {
				t.Errorf("rule %s: %d series, want one per pod (%d): %s", r.Name, len(series), pods, q)
			}
		}
	}
	sort.Strings(absent)
	if want := []string{"dcgm_sm_active", "vllm_itl_mean"}; !slices.Equal(absent, want) {
		t.Errorf("rules whose metrics the fleet lacks: %v, want %v", absent, want)
	}

	srv := natstest.Start(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	findings, _ := runOnceCollecting(t, nc, "run", "--config", file, "--once", "--backfill", fleetBackfill(end),
		"--source.url", vm.URL(), "--nats.url", srv.ClientURL(), "--web.listen-address", "")

	byRule := map[string]int{}
	for _, fd := range findings {
		byRule[fd.Rule]++
		if !presetRules[fd.Rule] {
			t.Errorf("finding from %q, which is not a preset rule", fd.Rule)
		}
		if fd.Labels["preset"] == "" {
			t.Errorf("finding of %s lacks the preset label: %v", fd.Rule, fd.Labels)
		}
		for _, m := range f.Models {
			if m.Quiet && fd.Labels["model"] == m.Name {
				t.Errorf("finding on the quiet model %s: %s %s at %v (score %.2f)", m.Name, fd.Rule, fd.Series, fd.WindowEnd, fd.Score)
			}
		}
	}
	t.Logf("%d findings by rule: %v", len(findings), byRule)

	checkLatencySpikesFound(t, f, findings, "vllm_ttft_mean", "vllm_e2e_latency_mean")
}
