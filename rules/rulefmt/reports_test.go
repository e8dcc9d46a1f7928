package rulefmt

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const reportsHead = `source: {url: http://127.0.0.1:8428}
groups:
  - name: g
    rules:
      - {name: r, expr: up}
`

func TestReportsGood(t *testing.T) {
	cfg, err := Parse([]byte(reportsHead+`
slos:
  - name: ttft-1s
    objective: 99
    window: 7d
    sli:
      latency: {metric: vllm:time_to_first_token_seconds_bucket, threshold: 1s, by: [model]}
  - name: ok-requests
    objective: 99.5
    sli:
      events:
        error_query: sum(rate(errors_total[{{.window}}]))
        total_query: sum(rate(requests_total[{{.window}}]))
reports:
  - name: daily
    schedule: "30 6 * * *"
    time_zone: Europe/Berlin
    selector: '{namespace="inference"}'
    by: [model]
    output_dir: /var/lib/inferwatch/reports
    keep: 14
    slos: [ttft-1s]
  - name: hourly
    schedule: '@hourly'
    period: 1h
    compare: [1h]
    formats: [json]
    gpu_metric: none
    groups: [latency]
    rules: [ttft_mean, latency/e2e_latency_mean]
`), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.SLOs) != 2 || len(cfg.Reports) != 2 {
		t.Fatalf("got %d slos and %d reports", len(cfg.SLOs), len(cfg.Reports))
	}
	s := cfg.SLOs[0]
	if s.Latency == nil || s.Latency.Metric != "vllm:time_to_first_token_seconds" || s.Latency.Threshold != time.Second || s.Window != 7*24*time.Hour || s.Objective != 99 {
		t.Errorf("slo 0 = %+v, latency %+v", s, s.Latency)
	}
	if e := cfg.SLOs[1].Events; e == nil || e.ErrorQuery == "" || e.GoodQuery != "" || cfg.SLOs[1].Window != DefaultSLOWindow {
		t.Errorf("slo 1 = %+v", cfg.SLOs[1])
	}
	if h := cfg.Reports[1]; !reflect.DeepEqual(h.Groups, []string{"latency"}) || !reflect.DeepEqual(h.Rules, []string{"ttft_mean", "latency/e2e_latency_mean"}) {
		t.Errorf("hourly covers groups %q, rules %q", h.Groups, h.Rules)
	}
	d := cfg.Reports[0]
	if d.Location.String() != "Europe/Berlin" || d.Keep != 14 || d.Period != 24*time.Hour || len(d.Compare) != 2 ||
		d.Selector != `{namespace="inference"}` || d.By[0] != "model" || d.Engine != "vllm" || len(d.Formats) != 3 || d.Pos.Line == 0 {
		t.Errorf("report 0 = %+v", d)
	}
	// 06:30 in Berlin on a winter day is 05:30 UTC.
	next := d.Cron.Next(time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 1, 11, 5, 30, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("next run %v, want %v", next, want)
	}
	h := cfg.Reports[1]
	if h.Period != time.Hour || h.GPUMetric != "none" || len(h.Formats) != 1 || h.OutputDir != "reports" || h.Keep != DefaultReportKeep {
		t.Errorf("report 1 = %+v", h)
	}
}

func TestReportsBad(t *testing.T) {
	_, err := Parse([]byte(reportsHead+`slos:
  - name: a
    objective: 100
    sli:
      events:
        good_query: sum(rate(x[5m]))
        total_query: "sum(rate(y[{{.window}}])"
  - name: b
    sli: {latency: {threshold: 1s}}
reports:
  - name: daily
    schedule: "0 25 * * *"
    time_zone: Mars/Olympus
    slos: [nope]
  - name: two words
    schedule: "*/5 * *"
    formats: [pdf]
  - name: daily
    schedule: "@fortnightly"
    engine: tgi
    keep: 0
    bogus: 1
`), "r.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`r.yaml:8:16: slo "a": objective 100 leaves no error budget`,
		`r.yaml:11:21: slo "a": sli.events.good_query must hold {{.window}}`,
		`r.yaml:12:22: slo "a": sli.events.total_query "sum(rate(y[{{.window}}])" is not valid MetricsQL`,
		`r.yaml:13:5: slo "b" needs an objective`,
		`r.yaml:14:20: slo "b": sli.latency needs metric`,
		`r.yaml:17:18: report "daily": schedule "0 25 * * *": the hour field "25"`,
		`r.yaml:18:16: report "daily": time_zone "Mars/Olympus" is not a known IANA time zone`,
		`r.yaml:19:12: report "daily": no slo named "nope"`,
		`r.yaml:20:11: report "two words": the name must be letters, digits, _ and -`,
		`r.yaml:21:15: report "two words": schedule "*/5 * *" has 3 fields; a cron spec has 5`,
		`r.yaml:22:15: report "two words": format must be one of html, json, md, got "pdf"`,
		`r.yaml:23:11: duplicate report name "daily"; the first is at line 16`,
		`r.yaml:24:15: report "daily": schedule "@fortnightly"`,
		`r.yaml:25:13: report "daily": engine must be one of vllm, sglang, got "tgi"`,
		`r.yaml:26:11: report "daily": keep must be in [1, 100000], got 0`,
		`r.yaml:27:5: unknown field "bogus" in report "daily"`,
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Errorf("got %d errors, want %d:\n%s", len(lines), len(want), err)
	}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			got := ""
			if i < len(lines) {
				got = lines[i]
			}
			t.Errorf("error %d:\n got  %s\n want %s…", i, got, w)
		}
	}
}
