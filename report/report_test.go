package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/inferwatch/inferwatch/report"
)

// schema is the JSON Schema of the report document, compiled once.
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("schema/report.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validate checks a document against the schema, and that none of its
// renderings prints NaN or Inf.
func validate(t *testing.T, sch *jsonschema.Schema, doc *report.Document) (js, html, md []byte) {
	t.Helper()
	js, err := report.JSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("the JSON of %s does not match schema/report.v1.json: %v", doc.Name, err)
	}
	html, err = report.HTML(doc)
	if err != nil {
		t.Fatal(err)
	}
	md = report.Markdown(doc)
	for name, b := range map[string][]byte{"json": js, "html": html, "md": md} {
		for _, bad := range []string{"NaN", "+Inf", "-Inf"} {
			if i := bytes.Index(b, []byte(bad)); i >= 0 {
				t.Errorf("the %s of %s prints %s: …%s…", name, doc.Name, bad, b[max(0, i-80):min(len(b), i+40)])
			}
		}
	}
	return js, html, md
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run %s -update to write it)", err, t.Name())
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if d := jsonDiff(g, w, "$"); d != "" {
		t.Fatalf("%s differs from the golden file: %s\n(run go test ./report -run %s -update if the change is meant)", path, d, t.Name())
	}
}

// jsonDiff compares two decoded JSON values; numbers may differ by a
// relative 1e-9, as sums the store adds in another order do.
func jsonDiff(got, want any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want an object", path, got)
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if d := jsonDiff(g[k], w[k], path+"."+k); d != "" {
				return d
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %v, want %d items", path, got, len(w))
		}
		for i := range w {
			if d := jsonDiff(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
			return fmt.Sprintf("%s: got %v, want %v", path, got, w)
		}
	default:
		if !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("%s: got %v, want %v", path, got, want)
		}
	}
	return ""
}

// TestGoldenDays builds the reports of three days of the fixed fleet and
// compares their JSON with the golden files, then checks the facts each
// day is known for: the incident injected on it.
func TestGoldenDays(t *testing.T) {
	setup(t)
	cfg := loadConfig(t, t.TempDir())
	r := reporter(t, cfg, true)
	sp := spec(t, cfg, "daily")
	sch := schema(t)
	docs := map[int]*report.Document{}
	for _, d := range []int{21, 22, 23} {
		doc, err := r.Build(context.Background(), sp, day(d+1))
		if err != nil {
			t.Fatal(err)
		}
		js, _, _ := validate(t, sch, doc)
		golden(t, "daily-2026-11-"+itoa(d)+".json", js)
		docs[d] = doc
	}
	has := func(d int, kind, model, fragment string) {
		t.Helper()
		for _, c := range docs[d].Changes {
			if c.Kind == kind && (model == "" || c.Model == model) && strings.Contains(c.Text, fragment) {
				return
			}
		}
		t.Errorf("21+%d Nov: no %s change for %q containing %q; changes: %s", d-21, kind, model, fragment, changeTexts(docs[d]))
	}
	has(21, "decay", "llama-3.1-70b-instruct", "is decaying")
	has(22, "traffic", "qwen2.5-32b-instruct", "surged")
	has(22, "forecast", "qwen2.5-32b-instruct", "above the 90 % interval")
	has(23, "coupling", "llama-3.1-70b-instruct", "vllm-llama-70b-2")
	has(22, "incident", "qwen2.5-32b-instruct", "its first diagnosis is traffic surge")
	for d, doc := range docs {
		for _, c := range doc.Changes {
			if c.Model == "mistral-7b-instruct" {
				t.Errorf("%d Nov: a change on the quiet model: %s", d, c.Text)
			}
		}
		if !doc.Events.Read || doc.Anomalies.Count == 0 {
			t.Errorf("%d Nov: events read %v, %d findings", d, doc.Events.Read, doc.Anomalies.Count)
		}
		if len(doc.Models) != 3 || len(doc.SLOs) != 2 {
			t.Fatalf("%d Nov: %d models, %d SLOs", d, len(doc.Models), len(doc.SLOs))
		}
	}
	// 22 Nov: the surge's alert on qwen's request rate fired in the
	// afternoon and resolved; two scale signals; the forecasts were checked.
	d22 := docs[22]
	surge := false
	for _, a := range d22.Alerts.Top {
		if a.Rule == "request_rate" && a.Labels["model"] == "qwen2.5-32b-instruct" && a.Start.Hour() == 12 && a.End.After(a.Start) && a.End.Before(day(22).Add(14*time.Hour)) {
			surge = true
		}
	}
	if !surge {
		t.Errorf("no alert episode of the surge on 22 Nov: %+v", d22.Alerts)
	}
	if len(d22.Scale) != 1 || d22.Scale[0].Signals != 2 || d22.Scale[0].Max != 3 || d22.Scale[0].Desired != 2 {
		t.Errorf("scale %+v", d22.Scale)
	}
	if len(d22.Forecasts) != 3 {
		t.Fatalf("%d forecast series, want 3", len(d22.Forecasts))
	}
	for _, f := range d22.Forecasts {
		if f.Checked < 280 || !(f.Coverage > 0 && f.Coverage <= 1) || !(f.MAE > 0) || !(f.NaiveMAE > 0) {
			t.Errorf("forecast check %+v", f)
		}
	}
	// 21 Nov: a week before is before the fleet began: no figure, said so.
	for _, m := range docs[21].Models {
		for _, l := range m.Latency {
			if l.Available && !isNaN(float64(l.Quantiles[2].Previous[1])) {
				t.Errorf("%s %s: a week-before figure %v where the store has none", m.Name, l.Kind, l.Quantiles[2].Previous[1])
			}
		}
	}
}

func isNaN(x float64) bool { return x != x }

func itoa(d int) string { return string(rune('0'+d/10)) + string(rune('0'+d%10)) }

func changeTexts(d *report.Document) string {
	var s []string
	for _, c := range d.Changes {
		s = append(s, c.Kind+": "+c.Text)
	}
	if len(s) == 0 {
		return "(none)"
	}
	return "\n  " + strings.Join(s, "\n  ")
}

// TestGapAndNewPod: a day with three hours missing and a pod that appears
// at 13:00 is stated, not drawn across.
func TestGapAndNewPod(t *testing.T) {
	setup(t)
	cfg := loadConfig(t, t.TempDir())
	doc, err := reporter(t, cfg, false).Build(context.Background(), spec(t, cfg, "gap"), day(25))
	if err != nil {
		t.Fatal(err)
	}
	_, html, md := validate(t, schema(t), doc)
	if len(doc.Models) != 3 {
		t.Fatalf("%d models", len(doc.Models))
	}
	for _, m := range doc.Models {
		if len(m.Coverage.Gaps) != 1 || !m.Coverage.Gaps[0].Start.Equal(day(24).Add(3*time.Hour-time.Minute)) && !m.Coverage.Gaps[0].Start.Equal(day(24).Add(3*time.Hour)) {
			t.Errorf("%s: gaps %v, want the one from 03:00", m.Name, m.Coverage.Gaps)
		}
		if s := float64(m.Coverage.Share); s < 0.86 || s > 0.88 {
			t.Errorf("%s: coverage %v, want 21 of 24 hours", m.Name, s)
		}
	}
	found := false
	for _, c := range doc.Changes {
		if c.Kind == "label" && strings.Contains(c.Text, "pod vllm-qwen-32b-2 of qwen2.5-32b-instruct appeared at 13:00") {
			found = true
		}
	}
	if !found {
		t.Errorf("the new pod is not stated; changes: %s", changeTexts(doc))
	}
	if !bytes.Contains(html, []byte("missing 03:0")) || !bytes.Contains(md, []byte("Samples cover 88 %")) {
		t.Errorf("the gap is not stated in the HTML or the Markdown")
	}
	if doc.Events.Read || len(doc.Notes) == 0 || !strings.Contains(strings.Join(doc.Notes, " "), "events were not read") {
		t.Errorf("without a stream the report must say so: %q", doc.Notes)
	}
}

// TestDaylightSavingDay: the day summer time ends in Berlin lasts 25 hours
// and the report says so.
func TestDaylightSavingDay(t *testing.T) {
	setup(t)
	cfg := loadConfig(t, t.TempDir())
	sp := spec(t, cfg, "dst")
	berlin, _ := time.LoadLocation("Europe/Berlin")
	doc, err := reporter(t, cfg, false).Build(context.Background(), sp, time.Date(2026, 10, 26, 0, 0, 0, 0, berlin))
	if err != nil {
		t.Fatal(err)
	}
	_, html, _ := validate(t, schema(t), doc)
	if doc.Period.Hours != 25 || !strings.Contains(doc.Period.ClockChange, "25 hours long: the clocks went back by 1 hour in Europe/Berlin") {
		t.Errorf("period %+v", doc.Period)
	}
	if !doc.Period.Start.Equal(time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)) || doc.Comparisons[0].Hours != 24 {
		t.Errorf("period from %v, day before %v hours", doc.Period.Start, doc.Comparisons[0].Hours)
	}
	if len(doc.Models) != 3 || !bytes.Contains(html, []byte("the clocks went back")) {
		t.Errorf("%d models; clock change stated: %v", len(doc.Models), bytes.Contains(html, []byte("the clocks went back")))
	}
}

// TestDayWithoutData: a day the store holds nothing for is a report that
// says so, with no chart and no NaN.
func TestDayWithoutData(t *testing.T) {
	setup(t)
	cfg := loadConfig(t, t.TempDir())
	doc, err := reporter(t, cfg, true).Build(context.Background(), spec(t, cfg, "daily"), day(30).AddDate(0, 0, 10))
	if err != nil {
		t.Fatal(err)
	}
	_, html, md := validate(t, schema(t), doc)
	if len(doc.Models) != 0 || len(doc.Changes) != 0 || !strings.Contains(strings.Join(doc.Notes, " "), "the store holds no data of this fleet") {
		t.Errorf("models %d, changes %s, notes %q", len(doc.Models), changeTexts(doc), doc.Notes)
	}
	if bytes.Contains(html, []byte(`class="chart"`)) || !bytes.Contains(html, []byte("No model of this fleet has samples in the period")) ||
		!bytes.Contains(md, []byte("No model of this fleet has samples")) {
		t.Error("the HTML or Markdown does not state that there is no data")
	}
	for _, s := range doc.SLOs {
		if len(s.Series) != 0 || s.Reason == "" {
			t.Errorf("SLO %s without data: %+v", s.Name, s)
		}
	}
}

// TestMakeRetainAnnounce makes three reports into one directory with keep
// 2: two are left, the state names the newest, and each was announced.
func TestMakeRetainAnnounce(t *testing.T) {
	f := setup(t)
	dir := t.TempDir()
	cfg := loadConfig(t, dir)
	r := reporter(t, cfg, true)
	sp := spec(t, cfg, "daily")
	sp.Formats = []string{"json", "md"}
	_ = f
	var last *report.Result
	for _, d := range []int{21, 22, 23} {
		res, err := r.Make(context.Background(), sp, day(d+1).Add(3*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "daily-2026-11-"+itoa(d+1)+"T0000+0000.json"); res.Files["json"] != want {
			t.Errorf("json file %q, want %q", res.Files["json"], want)
		}
		last = res
	}
	if len(last.Removed) != 2 || !strings.Contains(last.Removed[0], "daily-2026-11-22T0000+0000.json") {
		t.Errorf("removed %q, want the report of 22 Nov's two files", last.Removed)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "daily-*"))
	if len(names) != 4 {
		t.Errorf("files left %q, want two reports of two files", names)
	}
	end, ok, err := report.LastEnd(dir, "daily")
	if err != nil || !ok || !end.Equal(day(24)) {
		t.Errorf("last end %v %v %v", end, ok, err)
	}
	_ = json.Valid
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
