package process

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestWriteMetrics: the families parse as Prometheus' text format, each
// with its help and type, and the start time is the one given.
func TestWriteMetrics(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	var b strings.Builder
	WriteMetrics(&b, start)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("parsing %q: %v", b.String(), err)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_cycles_total", "process_start_time_seconds"} {
		f, ok := fams[name]
		if !ok {
			t.Fatalf("no family %s in %q", name, b.String())
		}
		if f.GetHelp() == "" || len(f.GetMetric()) != 1 {
			t.Errorf("%s: help %q, %d samples; want a help text and one sample", name, f.GetHelp(), len(f.GetMetric()))
		}
	}
	if got := fams["process_start_time_seconds"].GetMetric()[0].GetGauge().GetValue(); got != 1_700_000_000 {
		t.Errorf("process_start_time_seconds %v, want 1700000000", got)
	}
	if got := fams["go_goroutines"].GetMetric()[0].GetGauge().GetValue(); got < 1 {
		t.Errorf("go_goroutines %v, want at least 1 (this test's)", got)
	}
	if got := fams["go_gc_cycles_total"].GetType().String(); got != "COUNTER" {
		t.Errorf("go_gc_cycles_total is a %s, want COUNTER", got)
	}
}
