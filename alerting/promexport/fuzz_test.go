package promexport

import (
	"bytes"
	"context"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferwatch/inferwatch/alerting"
)

// FuzzLabels checks that whatever labels a series has, the exposition
// parses with the classic name rules and the score is there.
func FuzzLabels(f *testing.F) {
	f.Add("model", "qwen", "k8s.pod", "p\"1\n")
	f.Add("__name__", "x", "rule", "r")
	f.Add("9", "\xff", "", "v")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		if !model.LegacyValidation.IsValidLabelName(SanitizeLabelName(k1)) {
			t.Fatalf("SanitizeLabelName(%q) = %q", k1, SanitizeLabelName(k1))
		}
		e := New(Options{})
		e.Send(context.Background(), alerting.Batch{Scores: []alerting.Scores{{Rule: "r", Labels: map[string]string{k1: v1, k2: v2}, Score: []float64{1}}}})
		var buf bytes.Buffer
		e.WritePrometheus(&buf)
		p := expfmt.NewTextParser(model.LegacyValidation)
		mfs, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("labels %q=%q %q=%q: %v\n%s", k1, v1, k2, v2, err, buf.String())
		}
		if n := len(mfs[FamilyAnomalyScore].GetMetric()); n != 1 {
			t.Fatalf("%d score series, want 1:\n%s", n, buf.String())
		}
	})
}
