package discover

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"

	"github.com/inferwatch/inferwatch/ingest"
)

func labels(kv ...string) ingest.Labels {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return ingest.LabelsFromMap(m)
}

func TestChooseBy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		defaults []string
		series   []ingest.Labels
		want     []string
	}{
		{"own labels", []string{"model_name", "pod"},
			[]ingest.Labels{labels("model_name", "a", "pod", "p1"), labels("model_name", "a", "pod", "p2")},
			[]string{"model_name", "pod"}},
		{"both model labels", []string{"model_name", "pod"},
			[]ingest.Labels{labels("model_name", "a", "model", "a", "pod", "p1")},
			[]string{"model_name", "model", "pod"}},
		{"scrape's model label only", []string{"model_name", "pod"},
			[]ingest.Labels{labels("model", "a", "pod", "p1")},
			[]string{"model", "pod"}},
		{"instance for a missing pod", []string{"model_name", "pod"},
			[]ingest.Labels{labels("model_name", "a", "instance", "10.0.0.1:8000"), labels("model_name", "a", "instance", "10.0.0.2:8000")},
			[]string{"model_name", "instance"}},
		{"no fallback when the model tells them apart", []string{"model_name", "pod"},
			[]ingest.Labels{labels("model_name", "a", "instance", "i1"), labels("model_name", "b", "instance", "i2")},
			[]string{"model_name"}},
		{"nothing carried", []string{"model_name", "pod"},
			[]ingest.Labels{labels("job", "x")},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := chooseBy(tc.defaults, tc.series); !slices.Equal(got, tc.want) {
				t.Errorf("chooseBy = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGroupInterval(t *testing.T) {
	for _, tc := range []struct{ scrape, want time.Duration }{
		{0, time.Minute},
		{15 * time.Second, time.Minute},
		{time.Minute, time.Minute},
		{61 * time.Second, 2 * time.Minute},
		{5 * time.Minute, 5 * time.Minute},
	} {
		if got := groupInterval(tc.scrape); got != tc.want {
			t.Errorf("groupInterval(%v) = %v, want %v", tc.scrape, got, tc.want)
		}
	}
}

func TestHoldsData(t *testing.T) {
	present := map[string]bool{"a": true}
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{"a", true},
		{"b", false},
		{"a / b", false},
		{"a or b", true},
		{"sum by (pod) (rate(a[5m])) / 2", true},
		{"histogram_quantile(0.9, rate(b[5m]))", false},
	} {
		e, err := metricsql.Parse(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := holdsData(e, present); got != tc.want {
			t.Errorf("holdsData(%s) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestMatchNames(t *testing.T) {
	got := matchNames([]string{"vllm:num_requests_waiting", "DCGM_FI_DEV_GPU_UTIL"}, []string{`namespace="inference"`})
	want := `{__name__=~"vllm:num_requests_waiting|DCGM_FI_DEV_GPU_UTIL", namespace="inference"}`
	if got != want {
		t.Errorf("matchNames = %s, want %s", got, want)
	}
	if _, err := ingest.ParseSelector(got); err != nil {
		t.Errorf("%s does not parse: %v", got, err)
	}
}

// fakeStore holds series of raw samples, every 15 s over the hour
// before end.
type fakeStore struct {
	series []ingest.Labels
	end    time.Time
}

func (s fakeStore) LabelValues(_ context.Context, name, _ string, _, _ time.Time) ([]string, error) {
	var out []string
	for _, ls := range s.series {
		if v := ls.Get(name); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

func (s fakeStore) Series(_ context.Context, match string, _, _ time.Time) ([]ingest.Labels, error) {
	var out []ingest.Labels
	for _, ls := range s.series {
		if strings.Contains(match, ls.Get("__name__")) {
			out = append(out, ls)
		}
	}
	return out, nil
}

func (s fakeStore) Query(_ context.Context, q string, _ time.Time) ([]ingest.Series, error) {
	var ts []int64
	var vs []float64
	for t := s.end.Add(-time.Hour); !t.After(s.end); t = t.Add(15 * time.Second) {
		ts, vs = append(ts, t.UnixMilli()), append(vs, 1)
	}
	return []ingest.Series{{Labels: labels("q", q), Timestamps: ts, Values: vs}}, nil
}

func TestFindOnAStoreWithoutPods(t *testing.T) {
	end := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	var ss []ingest.Labels
	for _, inst := range []string{"10.0.0.1:8000", "10.0.0.2:8000"} {
		for _, n := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running"} {
			ss = append(ss, labels("__name__", n, "model_name", "llama", "instance", inst))
		}
	}
	rep, err := Find(context.Background(), fakeStore{ss, end}, Question{URL: "http://store", Start: end.Add(-time.Hour), End: end})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Empty() || len(rep.groups) != 1 {
		t.Fatalf("found %d presets, %d groups; want vllm in one group", len(rep.found), len(rep.groups))
	}
	g := rep.groups[0]
	if g.name != "vllm" || !slices.Equal(g.by, []string{"model_name", "instance"}) || g.interval != time.Minute || g.scrape != 15*time.Second {
		t.Errorf("group %s by %v interval %v scrape %v; want vllm by [model_name instance], 1m, 15s", g.name, g.by, g.interval, g.scrape)
	}
	text, err := rep.Config("http://ops:s3cr3t-pw@store:8428")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "s3cr3t-pw") {
		t.Errorf("the configuration holds the password:\n%s", text)
	}
	for _, want := range []string{"by: [model_name, instance]", "preset: vllm", "url: http://store:8428"} {
		if !strings.Contains(text, want) {
			t.Errorf("configuration lacks %q:\n%s", want, text)
		}
	}
}
