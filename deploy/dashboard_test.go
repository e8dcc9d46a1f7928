package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/inferwatch/inferwatch/deploy/grafana"
)

var update = flag.Bool("update", false, "rewrite the committed dashboard JSON from grafana.Dashboard")

// dashboardFiles are the committed copies of the dashboard: to import by
// hand, and in the chart for Grafana's sidecar.
var dashboardFiles = []string{"grafana/inferwatch.json", filepath.Join(chartDir, "dashboards", "inferwatch.json")}

// TestDashboardIsGenerated checks that the committed JSON is what the
// generator builds; -update rewrites it.
func TestDashboardIsGenerated(t *testing.T) {
	want, err := grafana.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range dashboardFiles {
		if *update {
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what grafana.Dashboard builds: go test -run TestDashboardIsGenerated -update", f)
		}
	}
}

// committedDashboard decodes the committed JSON strictly: a field the
// Grafana schema does not have fails. It returns the dashboard and its
// panels other than rows: the SDK's strict decoding of a panel returns an
// empty list of errors as an error, and so leaves every panel out of the
// dashboard, so each panel is decoded on its own (and its queries, which
// it leaves out in the same way, by the ordinary decoding).
func committedDashboard(t *testing.T) (dashboard.Dashboard, []dashboard.Panel) {
	t.Helper()
	plugins.RegisterDefaultPlugins()
	b, err := os.ReadFile(dashboardFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard.Dashboard
	if err := sdkErr(d.UnmarshalJSONStrict(b)); err != nil {
		t.Fatalf("%s: %v", dashboardFiles[0], err)
	}
	var raw struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var panels []dashboard.Panel
	for i, pr := range raw.Panels {
		var kind struct{ Type string }
		if err := json.Unmarshal(pr, &kind); err != nil {
			t.Fatal(err)
		}
		if kind.Type == "row" {
			var row dashboard.RowPanel
			if err := sdkErr(row.UnmarshalJSONStrict(pr)); err != nil {
				t.Fatalf("%s: panels[%d]: %v", dashboardFiles[0], i, err)
			}
			continue
		}
		var p dashboard.Panel
		if err := sdkErr(p.UnmarshalJSONStrict(pr)); err != nil {
			t.Fatalf("%s: panels[%d]: %v", dashboardFiles[0], i, err)
		}
		// The strict decoding checked the fields; the queries come from the
		// ordinary one, which keeps them.
		p = dashboard.Panel{}
		if err := json.Unmarshal(pr, &p); err != nil {
			t.Fatalf("%s: panels[%d]: %v", dashboardFiles[0], i, err)
		}
		if err := sdkErr(p.Validate()); err != nil {
			t.Fatalf("%s: panels[%d]: %v", dashboardFiles[0], i, err)
		}
		panels = append(panels, p)
	}
	return d, panels
}

// sdkErr turns the SDK's empty list of errors, which it returns as a
// non-nil error, into nil.
func sdkErr(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

// dashboardQuery is a panel's query as Grafana sends it, and where it is.
type dashboardQuery struct {
	panel, expr string
}

// dashboardQueries returns every query of the committed dashboard.
func dashboardQueries(t *testing.T, panels []dashboard.Panel) []dashboardQuery {
	t.Helper()
	var out []dashboardQuery
	for _, p := range panels {
		title := ""
		if p.Title != nil {
			title = *p.Title
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", title)
		}
		for _, target := range p.Targets {
			q, ok := target.(*prometheus.Dataquery)
			if !ok {
				t.Fatalf("panel %q: a %T query, not Prometheus'", title, target)
			}
			out = append(out, dashboardQuery{panel: title, expr: q.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return out
}

// grafanaVariables stand for the dashboard's variables as Grafana
// interpolates them.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "1m", "$horizon", "10m", "$group", ".*", "$rule", ".*",
	"$forecast_rule", ".*", "$scale_rule", ".*",
)

// metricNames parses a query as PromQL and returns the metric names it reads.
func metricNames(t *testing.T, q dashboardQuery) []string {
	t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariables.Replace(q.expr))
	if err != nil {
		t.Errorf("panel %q: %s is not PromQL: %v", q.panel, q.expr, err)
		return nil
	}
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				t.Errorf("panel %q: %s selects no metric by name", q.panel, q.expr)
			}
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// TestDashboardQueriesParse checks the committed dashboard against
// Grafana's schema and every query against Prometheus' parser.
func TestDashboardQueriesParse(t *testing.T) {
	d, panels := committedDashboard(t)
	if d.Uid == nil || *d.Uid != grafana.UID {
		t.Errorf("uid: want %s", grafana.UID)
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	if !strings.Contains(strings.Join(vars, " "), "datasource") {
		t.Errorf("no datasource variable: %v", vars)
	}
	for _, q := range dashboardQueries(t, panels) {
		metricNames(t, q)
		for _, v := range regexp.MustCompile(`\$\{?([a-z_]+)`).FindAllStringSubmatch(q.expr, -1) {
			if v[1] != "__rate_interval" && !strings.Contains(" "+strings.Join(vars, " ")+" ", " "+v[1]+" ") {
				t.Errorf("panel %q uses $%s, which is no variable of the dashboard", q.panel, v[1])
			}
		}
	}
}

// TestDashboardInChart checks that the chart's dashboard ConfigMap holds
// the committed dashboard with the label Grafana's sidecar looks for.
func TestDashboardInChart(t *testing.T) {
	files, err := renderChart(map[string]any{"dashboard": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	r := decodeAll(t, files)
	if r.dashboard == nil {
		t.Fatal("dashboard.enabled renders no ConfigMap")
	}
	if r.dashboard.Labels["grafana_dashboard"] != "1" {
		t.Errorf("labels: want grafana_dashboard: \"1\", got %v", r.dashboard.Labels)
	}
	want, err := os.ReadFile(dashboardFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := r.dashboard.Data["inferwatch.json"]; got != strings.TrimSuffix(string(want), "\n") {
		t.Error("the ConfigMap's inferwatch.json is not deploy/grafana/inferwatch.json")
	}
}

// TestDashboardMetricsAreExported runs the real daemon, with the chart's
// scale configuration (ci/scale-values.yaml), against a VictoriaMetrics
// holding two days of a vLLM deployment's metrics with a queue spike at
// the end, and checks that every metric the dashboard reads is there:
// on the daemon's /metrics, or in the store (vLLM's own series and those
// the daemon wrote back). It also asks the daemon for the metrics-api
// example's target.
func TestDashboardMetricsAreExported(t *testing.T) {
	bin := inferwatchBinary(t)
	vm := startVictoriaMetrics(t)
	importFleet(t, vm, time.Now().Add(-time.Minute).Truncate(time.Minute))

	files, err := renderChart(readValues(t, filepath.Join(chartDir, "ci", "scale-values.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	cfg := decodeAll(t, files).configMap.Data["inferwatch.yml"]
	dir := t.TempDir()
	cfg = strings.ReplaceAll(cfg, "http://vmsingle-vm.monitoring.svc:8428", vm)
	cfg = strings.ReplaceAll(cfg, "/var/lib/inferwatch/nats", filepath.Join(dir, "nats"))
	cfgFile := filepath.Join(dir, "inferwatch.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	web := freeAddr(t)
	var stderr syncBuffer
	cmd := exec.Command(bin, "run", "--config", cfgFile, "--web.listen-address", web,
		"--nats.embedded.listen", "127.0.0.1:0", "--backfill", "1d")
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})

	// The first evaluations judge a day of history: findings, forecasts
	// and a scale signal.
	var page string
	ready := func() bool {
		page = get(t, "http://"+web+"/metrics")
		return counterAbove(page, "inferwatch_findings_total", 0) &&
			strings.Contains(page, "inferwatch_scale_desired_replicas{") &&
			strings.Contains(page, "inferwatch_forecast{") &&
			strings.Contains(page, "inferwatch_anomaly_score{")
	}
	waitUntil(t, 4*time.Minute, "the daemon's findings, forecast and scale signal on /metrics", ready, stderr.String)
	exported := metricFamilies(page)
	var stored map[string]bool
	waitUntil(t, time.Minute, "the write-back series in the store", func() bool {
		stored = storeNames(t, vm)
		return stored["y"] && stored["yhat_lower"] && stored["yhat_upper"]
	}, stderr.String)

	_, panels := committedDashboard(t)
	need := map[string][]string{}
	for _, q := range dashboardQueries(t, panels) {
		for _, n := range metricNames(t, q) {
			need[n] = append(need[n], q.panel)
		}
	}
	for _, v := range grafana.Variables {
		need[v.Metric] = append(need[v.Metric], "variable "+v.Name)
	}
	names := make([]string, 0, len(need))
	for n := range need {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !exported[n] && !stored[n] {
			t.Errorf("%s (%s) is neither on the daemon's /metrics nor in the store", n, strings.Join(need[n], ", "))
		}
	}
	t.Logf("%d metrics checked: %s", len(names), strings.Join(names, " "))

	// The metrics-api example's path answers with the rule's number.
	resp, err := http.Get("http://" + web + "/keda/v1/targets/" + exampleRule + "/" + exampleTarget)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var signal struct {
		DesiredReplicas *float64 `json:"desired_replicas"`
	}
	if err := json.Unmarshal(body, &signal); resp.StatusCode != http.StatusOK || err != nil || signal.DesiredReplicas == nil {
		t.Errorf("GET the metrics-api example's path: %s: %s", resp.Status, body)
	}
}

// metricFamilies returns the metric names of an exposition page.
func metricFamilies(page string) map[string]bool {
	out := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}

// counterAbove says whether any series of a metric is above v.
func counterAbove(page, name string, v float64) bool {
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		var x float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &x); err == nil && x > v {
			return true
		}
	}
	return false
}

func storeNames(t *testing.T, vm string) map[string]bool {
	t.Helper()
	get(t, vm+"/internal/force_flush")
	var resp struct{ Data []string }
	if err := json.Unmarshal([]byte(get(t, vm+"/api/v1/label/__name__/values")), &resp); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range resp.Data {
		out[n] = true
	}
	return out
}

// importFleet writes two days of one vLLM pod at one-minute steps, ending
// at end: a daily cycle of traffic, and in the last 20 minutes a queue and
// latency spike the detectors report.
func importFleet(t *testing.T, vm string, end time.Time) {
	t.Helper()
	const model = "qwen2.5-32b-instruct"
	labels := map[string]string{"model_name": model, "namespace": "inference", "pod": "vllm-0"}
	n := 2 * 24 * 60
	ts := make([]int64, n)
	series := map[string][]float64{}
	var requests, tokens, ttftSum, ttftCount float64
	for i := range n {
		at := end.Add(time.Duration(i-n+1) * time.Minute)
		ts[i] = at.UnixMilli()
		day := 2 * math.Pi * float64(at.Unix()%86400) / 86400
		rate := 6 + 3*math.Sin(day) + 0.3*math.Sin(float64(i)*1.7)
		spike := i >= n-20
		waiting, ttft := 1+math.Mod(float64(i), 3), 0.4+0.05*math.Sin(float64(i))
		if spike {
			waiting, ttft = 60, 6
		}
		requests += rate * 60
		tokens += rate * 60 * 200
		ttftCount += rate * 60
		ttftSum += rate * 60 * ttft
		series["vllm:request_success_total"] = append(series["vllm:request_success_total"], requests)
		series["vllm:generation_tokens_total"] = append(series["vllm:generation_tokens_total"], tokens)
		series["vllm:time_to_first_token_seconds_sum"] = append(series["vllm:time_to_first_token_seconds_sum"], ttftSum)
		series["vllm:time_to_first_token_seconds_count"] = append(series["vllm:time_to_first_token_seconds_count"], ttftCount)
		series["vllm:num_requests_running"] = append(series["vllm:num_requests_running"], math.Round(rate*2))
		series["vllm:num_requests_waiting"] = append(series["vllm:num_requests_waiting"], waiting)
		series["vllm:kv_cache_usage_perc"] = append(series["vllm:kv_cache_usage_perc"], 0.3+rate/30)
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for name, values := range series {
		m := map[string]string{"__name__": name}
		for k, v := range labels {
			m[k] = v
		}
		if err := enc.Encode(map[string]any{"metric": m, "values": values, "timestamps": ts}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(vm+"/api/v1/import", "application/json", &body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("importing into VictoriaMetrics: %s: %s", resp.Status, b)
	}
	get(t, vm+"/internal/force_flush")
}

// startVictoriaMetrics runs the main module's VictoriaMetrics go tool on
// a free 127.0.0.1 port with a temporary data directory, until the test ends.
func startVictoriaMetrics(t *testing.T) string {
	t.Helper()
	tool := exec.Command("go", "tool", "-n", "victoria-metrics")
	tool.Dir = ".."
	out, err := tool.Output()
	if err != nil {
		t.Fatalf("go tool -n victoria-metrics in the repository: %v", err)
	}
	addr := freeAddr(t)
	var log syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, strings.TrimSpace(string(out)),
		"-storageDataPath="+t.TempDir(), "-httpListenAddr="+addr, "-retentionPeriod=100y", "-search.latencyOffset=0s")
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	url := "http://" + addr
	waitUntil(t, time.Minute, "VictoriaMetrics at "+url, func() bool {
		resp, err := http.Get(url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, log.String)
	return url
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool, show func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v\n%s", what, limit, show())
		}
		time.Sleep(500 * time.Millisecond)
	}
}
