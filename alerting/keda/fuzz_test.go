package keda

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParseTarget checks that any target a trigger or a URL may name is
// either refused or turned into an identity that reads back as itself.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"", "model=qwen", "pod=p1, model=qwen", `{model="qwen"}`, "a=1,a=2", "=", ",", "model=a%2Cb", `x="y"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseTarget(s)
		if err != nil {
			return
		}
		if s = strings.TrimSpace(s); s != "" && !strings.HasPrefix(id, "{") {
			t.Fatalf("ParseTarget(%q) = %q, not an identity", s, id)
		}
		if again, err := ParseTarget(id); err != nil || again != id {
			t.Fatalf("ParseTarget(%q) = %q, which reads back as %q, %v", s, id, again, err)
		}
		// A URL path holding the pairs, each escaped, names the same target.
		if !strings.HasPrefix(s, "{") && s != "" {
			var esc []string
			for _, p := range strings.Split(s, ",") {
				k, v, _ := strings.Cut(p, "=")
				esc = append(esc, url.PathEscape(strings.TrimSpace(k))+"="+url.PathEscape(v))
			}
			got, err := parseEscapedTarget(strings.Join(esc, ","))
			if err != nil || got != id {
				t.Fatalf("the escaped path of %q gives %q, %v; want %q", s, got, err, id)
			}
		}
	})
}

// FuzzParseMetadata checks that no trigger metadata makes the scaler
// panic, and that what it accepts is usable.
func FuzzParseMetadata(f *testing.F) {
	f.Add("r", "model=m", "desired_replicas", "1", "0", "false")
	f.Add("r", "", "predicted_load", "7.5", "0.5", "true")
	f.Add("", "{", "x", "NaN", "-Inf", "yes")
	f.Fuzz(func(t *testing.T, rule, target, metric, tv, av, stale string) {
		q, err := parseMetadata(map[string]string{MetaRule: rule, MetaTarget: target, MetaMetric: metric,
			MetaTargetValue: tv, MetaActivationValue: av, MetaAllowStale: stale})
		if err != nil {
			return
		}
		if q.rule == "" || !(q.targetValue > 0) || !isKnown(q.metric) {
			t.Fatalf("accepted an unusable query %+v", q)
		}
	})
}
