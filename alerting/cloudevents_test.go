package alerting

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testFinding() Finding {
	end := time.Date(2025, 3, 4, 5, 6, 7, 891_000_000, time.UTC)
	return Finding{
		Kind:        "anomaly",
		Group:       "vllm",
		Rule:        "queue-depth",
		Detector:    "sigma",
		Labels:      map[string]string{"__name__": "vllm:num_requests_waiting", "model": "m1", "pod": "p0"},
		Series:      `vllm:num_requests_waiting{model="m1",pod="p0"}`,
		WindowStart: end.Add(-2 * time.Minute),
		WindowEnd:   end,
		Value:       42,
		ValueTime:   end.Add(-time.Minute),
		Expected:    3,
		Lower:       1,
		Upper:       5,
		Score:       7.5,
		Severity:    "warning",
	}
}

func TestFindingID(t *testing.T) {
	base := testFinding()
	id := FindingID(base)
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("FindingID = %q, want 32 lower-case hex digits", id)
	}
	with := func(change func(f *Finding)) Finding {
		f := base
		f.Labels = make(map[string]string, len(base.Labels))
		for k, v := range base.Labels {
			f.Labels[k] = v
		}
		change(&f)
		return f
	}
	tests := []struct {
		name string
		f    Finding
		same bool
	}{
		{"identical copy", with(func(*Finding) {}), true},
		{"other score, value, band, severity, detector", with(func(f *Finding) {
			f.Score, f.Value, f.Lower, f.Upper, f.Expected = 99, -1, math.Inf(-1), math.NaN(), 0
			f.Severity, f.Detector = "critical", "mad"
		}), true},
		// The labels a rule adds or overrides are not the series' identity:
		// two series that differ only in an overridden label keep their
		// own ids, and a rule that adds a label does not change them.
		{"a label the rule added or changed", with(func(f *Finding) { f.Labels["team"] = "serving"; f.Labels["pod"] = "same" }), true},
		{"window end in another zone", with(func(f *Finding) {
			f.WindowEnd = f.WindowEnd.In(time.FixedZone("UTC+9", 9*3600))
		}), true},
		{"window end sub-millisecond change", with(func(f *Finding) {
			f.WindowEnd = f.WindowEnd.Add(500 * time.Microsecond)
		}), true},
		{"other rule", with(func(f *Finding) { f.Rule = "queue-depth-2" }), false},
		{"other group", with(func(f *Finding) { f.Group = "dcgm" }), false},
		{"other series", with(func(f *Finding) { f.Series = `vllm:num_requests_waiting{model="m1",pod="p1"}` }), false},
		{"window start one millisecond earlier", with(func(f *Finding) { f.WindowStart = f.WindowStart.Add(-time.Millisecond) }), false},
		{"window end one millisecond later", with(func(f *Finding) { f.WindowEnd = f.WindowEnd.Add(time.Millisecond) }), false},
		{"group/rule boundary moved", with(func(f *Finding) { f.Group, f.Rule = "vllmq", "ueue-depth" }), false},
		{"rule/series boundary moved", with(func(f *Finding) { f.Rule, f.Series = f.Rule+"v", f.Series[1:] }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FindingID(tc.f)
			if (got == id) != tc.same {
				t.Errorf("FindingID = %s, base %s: same = %v, want %v", got, id, got == id, tc.same)
			}
		})
	}
}

func TestNewFindingEvent(t *testing.T) {
	f := testFinding()
	f.Lower = math.Inf(-1)
	f.Expected = math.NaN()
	f.WindowEnd = f.WindowEnd.In(time.FixedZone("UTC-5", -5*3600))
	ev, err := NewFindingEvent(f, "")
	if err != nil {
		t.Fatal(err)
	}
	if ev.SpecVersion != "1.0" || ev.Source != "/inferwatch" || ev.Type != "io.inferwatch.finding.v1" ||
		ev.Subject != f.Series || ev.DataContentType != "application/json" || ev.ID != FindingID(f) {
		t.Errorf("event attributes = %+v", ev)
	}
	if !ev.Time.Equal(f.WindowEnd) || ev.Time.Location() != time.UTC {
		t.Errorf("time = %v, want %v in UTC", ev.Time, f.WindowEnd)
	}
	if err := ev.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	var data map[string]any
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatalf("data %s: %v", ev.Data, err)
	}
	want := map[string]any{
		"kind": "anomaly", "group": "vllm", "rule": "queue-depth", "detector": "sigma",
		"series": f.Series, "value": 42.0, "expected": nil, "lower": nil, "upper": 5.0,
		"score": 7.5, "severity": "warning",
		"window_start": "2025-03-04T05:04:07.891Z", "window_end": "2025-03-04T00:06:07.891-05:00",
		"value_time": "2025-03-04T05:05:07.891Z",
	}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("data[%q] = %#v, want %#v", k, data[k], v)
		}
	}
	if labels, _ := data["labels"].(map[string]any); len(labels) != 3 || labels["pod"] != "p0" {
		t.Errorf("data labels = %v", data["labels"])
	}
	if len(data) != len(want)+1 {
		t.Errorf("data has %d fields, want %d: %s", len(data), len(want)+1, ev.Data)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"time":"2025-03-04T05:06:07.891Z"`) {
		t.Errorf("event JSON lacks RFC 3339 UTC time: %s", raw)
	}

	ev, err = NewFindingEvent(f, "https://inferwatch.example/cluster-a")
	if err != nil || ev.Source != "https://inferwatch.example/cluster-a" {
		t.Errorf("explicit source: %v, %q", err, ev.Source)
	}
}

func TestNewFindingEventRejects(t *testing.T) {
	f := func(kind, source, wantErr string) {
		t.Helper()
		fd := testFinding()
		fd.Kind = kind
		_, err := NewFindingEvent(fd, source)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("kind %q source %q: err = %v, want it to contain %q", kind, source, err, wantErr)
		}
	}
	f("", "", `kind "" is not a single NATS subject token`)
	f("anomaly.high", "", `kind "anomaly.high"`)
	f("*", "", `kind "*"`)
	f(">", "", `kind ">"`)
	f("an omaly", "", `kind "an omaly"`)
	f("anomaly", "http://[::1", `source "http://[::1" is not a URI-reference`)
}

func TestValidSubjectToken(t *testing.T) {
	for tok, want := range map[string]bool{
		"anomaly": true, "forecast_breach": true, "scale-up": true, "ü": true,
		"": false, "a.b": false, "a*": false, ">": false, "a b": false, "a\tb": false, "a\nb": false,
	} {
		if got := ValidSubjectToken(tok); got != want {
			t.Errorf("ValidSubjectToken(%q) = %v, want %v", tok, got, want)
		}
	}
}

func TestEventValidate(t *testing.T) {
	ok, err := NewFindingEvent(testFinding(), "")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		change  func(*Event)
		wantErr string
	}{
		"spec version": {func(e *Event) { e.SpecVersion = "0.3" }, `specversion is "0.3"`},
		"id":           {func(e *Event) { e.ID = "" }, "id is empty"},
		"source":       {func(e *Event) { e.Source = "" }, "source is empty"},
		"type":         {func(e *Event) { e.Type = "" }, "type is empty"},
		"data":         {func(e *Event) { e.Data = json.RawMessage(`{"a":`) }, "data is not valid JSON"},
	} {
		ev := ok
		tc.change(&ev)
		if err := ev.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: Validate() = %v, want %q", name, err, tc.wantErr)
		}
		// The attributes alone: every case but the data's.
		err := ev.ValidateAttributes()
		if name == "data" && err != nil || name != "data" && (err == nil || err.Error() != ev.Validate().Error()) {
			t.Errorf("%s: ValidateAttributes() = %v, Validate() = %v", name, err, ev.Validate())
		}
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("a finding event: Validate() = %v", err)
	}
}

// BenchmarkEventValidate: the checks of a forecast event, with and
// without scanning its data.
func BenchmarkEventValidate(b *testing.B) {
	ev, err := NewForecastEvent(testForecast(), "")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		check func() error
	}{{"all", ev.Validate}, {"attributes", ev.ValidateAttributes}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.check(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ExampleFindingID() {
	end := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	a := Finding{Group: "vllm", Rule: "queue", WindowEnd: end,
		Labels: map[string]string{"model": "m1", "pod": "p0"}, Score: 3}
	b := Finding{Group: "vllm", Rule: "queue", WindowEnd: end.In(time.FixedZone("CET", 3600)),
		Labels: map[string]string{"pod": "p0", "model": "m1"}, Score: 9}
	c := a
	c.WindowEnd = end.Add(time.Minute)
	fmt.Println(FindingID(a) == FindingID(b), FindingID(a) == FindingID(c))
	// Output: true false
}

func BenchmarkFindingID(b *testing.B) {
	f := testFinding()
	for b.Loop() {
		FindingID(f)
	}
}

func BenchmarkNewFindingEvent(b *testing.B) {
	f := testFinding()
	for b.Loop() {
		if _, err := NewFindingEvent(f, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFindingReadsBack: a finding's data decodes to the finding encoded,
// an undefined figure (NaN, or the missing side of a one-sided band, -Inf)
// reading back as NaN rather than as 0.
func TestFindingReadsBack(t *testing.T) {
	at := time.Date(2026, 11, 25, 14, 34, 0, 0, time.UTC)
	f := Finding{Kind: "anomaly", Group: "latency", Rule: "ttft_spike", Detector: "sigma",
		Labels: map[string]string{"pod": "p0"}, Series: `ttft{pod="p0"}`, WindowStart: at.Add(-time.Minute), WindowEnd: at,
		Value: 50, ValueTime: at, Expected: 10.3, Lower: math.Inf(-1), Upper: 10.9, Score: 41.2, Severity: "critical"}
	ev, err := NewFindingEvent(f, "")
	if err != nil {
		t.Fatal(err)
	}
	var got Finding
	if err := json.Unmarshal(ev.Data, &got); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(got.Lower) {
		t.Errorf("lower = %v, want NaN for the null written", got.Lower)
	}
	got.Lower = f.Lower
	if !reflect.DeepEqual(got, f) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, f)
	}
	var x JSONFloat
	if err := json.Unmarshal([]byte("null"), &x); err != nil || !math.IsNaN(float64(x)) {
		t.Errorf("null reads as %v, %v; want NaN", x, err)
	}
	if err := json.Unmarshal([]byte("2.5"), &x); err != nil || x != 2.5 {
		t.Errorf("2.5 reads as %v, %v", x, err)
	}
	if err := json.Unmarshal([]byte(`"x"`), &x); err == nil {
		t.Error(`"x" read as a number`)
	}
}

func TestDecodeData(t *testing.T) {
	for _, tc := range []struct {
		typ, data string
		want      any
	}{
		{FindingEventType, `{"kind":"anomaly"}`, &Finding{Kind: "anomaly"}},
		{ScaleEventType, `{"desired_replicas":3}`, &ScaleData{DesiredReplicas: 3}},
		{ReportEventType, `{}`, nil},
	} {
		got, err := DecodeData(Event{Type: tc.typ, Data: json.RawMessage(tc.data)})
		if err != nil || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.typ, got, err, tc.want)
		}
	}
	if _, err := DecodeData(Event{Type: AlertEventType, Data: json.RawMessage(`{"value":"x"}`)}); err == nil {
		t.Error("an alert whose value is a string decodes")
	}
}
