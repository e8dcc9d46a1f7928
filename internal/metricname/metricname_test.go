package metricname

import (
	"bytes"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestNameParsesBack registers metrics whose label values hold every
// character a group or rule name could, writes the page and reads it back
// with Prometheus' own text parser: each value must come back as it was.
func TestNameParsesBack(t *testing.T) {
	values := []string{"plain", "tab\there", "line\nbreak", "quote\"d", `back\slash`, "u2028\u2028sep", "ünïcødé", `{"json":1}`, "end\\"}
	set := metrics.NewSet()
	for i, v := range values {
		set.NewCounter(Name("inferwatch_test_total", "group", v, "rule", "r")).Add(i + 1)
	}
	var page bytes.Buffer
	set.WritePrometheus(&page)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(page.String()))
	if err != nil {
		t.Fatalf("page does not parse: %v\n%s", err, page.String())
	}
	got := map[string]float64{}
	for _, m := range fams["inferwatch_test_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "group" {
				got[l.GetValue()] = m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			}
		}
	}
	for i, v := range values {
		if got[v] != float64(i+1) {
			t.Errorf("value %q: read back %v, want %d (page:\n%s)", v, got[v], i+1, page.String())
		}
	}
}
