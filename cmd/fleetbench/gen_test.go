package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// TestGenerator: n series, each once, all selected by the bench's
// selector; a cluster's samples are the base fleet's, offset by the
// cluster's steps; two clusters differ.
func TestGenerator(t *testing.T) {
	const step = 15 * time.Second
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	first, last := now.Add(-2*time.Hour), now.Add(time.Hour)
	const n = 1000 // two full clusters of 399 and part of a third
	g, err := newGenerator(n, 1, step, first, last, shapeFleet)
	if err != nil {
		t.Fatal(err)
	}
	if g.clusters() != 3 {
		t.Fatalf("%d clusters, want 3", g.clusters())
	}
	var body bytes.Buffer
	from, to := now.Add(-time.Minute).UnixMilli(), now.UnixMilli()
	samples, err := g.writeRange(&body, from, to, 0, g.clusters())
	if err != nil {
		t.Fatal(err)
	}
	ss, err := ingest.ReadExportJSONL(&body, "generated")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != n || samples != 5*n {
		t.Fatalf("%d series, %d samples; want %d and %d", len(ss), samples, n, 5*n)
	}
	sel, err := ingest.ParseSelector(shapeFleet.selector())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range ss {
		if seen[s.Labels.String()] {
			t.Fatalf("%s twice", s.Labels)
		}
		seen[s.Labels.String()] = true
		if !sel.Matches(s.Labels) || s.Labels.Get("cluster") == "" {
			t.Fatalf("%s: not selected by %s, or no cluster", s.Labels, shapeFleet.selector())
		}
		if len(s.Timestamps) != 5 || s.Timestamps[0] != from || s.Timestamps[4] != to {
			t.Fatalf("%s: timestamps %v", s.Labels, s.Timestamps)
		}
	}
	// Cluster 1's first series is the base's, 6007 steps earlier.
	i := g.index(from)
	want := g.base[0].Values[i-g.offset[1] : i-g.offset[1]+5]
	got := ss[399].Values
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("cluster 1: %v, want %v", got, want)
		}
	}
	if c0, c1 := ss[0].Values, ss[399].Values; c0[0] == c1[0] && c0[1] == c1[1] && c0[2] == c1[2] {
		t.Fatalf("clusters 0 and 1 are alike: %v %v", c0, c1)
	}
	if _, err := g.writeRange(&body, to, last.Add(time.Hour).UnixMilli(), 0, 1); err == nil {
		t.Fatal("wrote samples past the generated end")
	}
}

// TestGeneratorInstances: the instances shape is n series of one metric
// that differ only in instance, all selected by its selector.
func TestGeneratorInstances(t *testing.T) {
	const step, n = 15 * time.Second, 70_000
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	g, err := newGenerator(n, 1, step, now.Add(-time.Hour), now.Add(time.Hour), shapeInstances)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	if _, err := g.writeRange(&body, now.UnixMilli(), now.UnixMilli(), 0, g.clusters()); err != nil {
		t.Fatal(err)
	}
	ss, err := ingest.ReadExportJSONL(&body, "generated")
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ingest.ParseSelector(shapeInstances.selector())
	if err != nil {
		t.Fatal(err)
	}
	instances := map[string]bool{}
	for _, s := range ss {
		if !sel.Matches(s.Labels) || len(s.Labels) != 3 {
			t.Fatalf("%s: not selected by %s, or other labels", s.Labels, shapeInstances.selector())
		}
		instances[s.Labels.Get("instance")] = true
	}
	if len(ss) != n || len(instances) != n {
		t.Fatalf("%d series, %d instances; want %d of each", len(ss), len(instances), n)
	}
}

// TestConfigs: the configuration of every rule kind is valid.
func TestConfigs(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []benchCase{{10000, time.Hour, "sigma"}, {10000, 24 * time.Hour, "auto"}, {100, time.Hour, "forecast"}} {
		for _, exportMetrics := range []bool{true, false} {
			p, err := writeConfig(dir, "http://127.0.0.1:8428", c, 15*time.Second, exportMetrics, shapeFleet.selector())
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := rulefmt.Load(p)
			if err != nil {
				b, _ := os.ReadFile(p)
				t.Fatalf("%s: %v\n%s", filepath.Base(p), err, b)
			}
			if cfg.Export.Metrics.Enabled != exportMetrics {
				t.Fatalf("%s: export.metrics.enabled %v", c, cfg.Export.Metrics.Enabled)
			}
			if _, err := rules.Build(cfg.Groups); err != nil {
				t.Fatalf("%s: %v", c, err)
			}
		}
	}
}

func TestParseCases(t *testing.T) {
	cs, err := parseCases(defaultCases)
	if err != nil || len(cs) != 8 || cs[3] != (benchCase{10000, 24 * time.Hour, "sigma"}) {
		t.Fatalf("%v %v", cs, err)
	}
	for _, bad := range []string{"", "10000/1h", "x/1h/sigma", "10/1h/nope", "10/30s/sigma", "10/3d/auto"} {
		if _, err := parseCases(bad); err == nil || !strings.Contains(err.Error(), "-cases") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
