package rulefmt

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExport(t *testing.T) {
	const head = "source: {url: 'http://h'}\n"
	const tail = "groups: [{name: g, rules: [{name: r, expr: up}]}]\n"
	cfg, err := Parse([]byte(head+tail), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Export{
		Metrics: MetricsExport{Enabled: true, MaxSeries: 10000, Expiry: 15 * time.Minute},
		KEDA:    KEDAExport{MetricsAPI: true, MaxTargets: 10000, Forget: time.Hour, MaxStreams: 256},
	}
	if !reflect.DeepEqual(cfg.Export, want) {
		t.Fatalf("defaults: %+v, want %+v", cfg.Export, want)
	}
	cfg, err = Parse([]byte(head+`export:
  metrics: {enabled: false, max_series: 500, expiry: 5m, leads: [5m, 10m]}
  keda: {metrics_api: false, listen: '0.0.0.0:9465', max_targets: 20, grace: 1m, forget: 2h, max_streams: 8}
`+tail), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want = Export{
		Metrics: MetricsExport{MaxSeries: 500, Expiry: 5 * time.Minute, Leads: []time.Duration{5 * time.Minute, 10 * time.Minute}},
		KEDA:    KEDAExport{Listen: "0.0.0.0:9465", MaxTargets: 20, Grace: time.Minute, Forget: 2 * time.Hour, MaxStreams: 8},
	}
	if !reflect.DeepEqual(cfg.Export, want) {
		t.Fatalf("set: %+v, want %+v", cfg.Export, want)
	}
	f := func(export, msg string) {
		t.Helper()
		_, err := Parse([]byte(head+export+tail), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Fatalf("%q: %v; want %q", export, err, msg)
		}
	}
	f("export: [a]\n", "c.yaml:2:9: export must be a mapping")
	f("export: {prometheus: {}}\n", `unknown field "prometheus" in export`)
	f("export: {metrics: {max_series: 0}}\n", "export.metrics.max_series")
	f("export: {metrics: {leads: 10m}}\n", "export.metrics.leads must be a list of durations")
	f("export: {metrics: {leads: [0s]}}\n", "export.metrics.leads must be greater than 0")
	f("export: {keda: {listen: 'nohost'}}\n", `export.keda.listen "nohost" is not host:port`)
	f("export: {keda: {grace: -1s}}\n", "export.keda.grace must be 0 or greater")
	f("export: {keda: {max_streams: 1.5}}\n", "export.keda.max_streams must be a whole number")
	f("export: {keda: {metric_api: true}}\n", `unknown field "metric_api" in export.keda; did you mean "metrics_api"?`)
}
