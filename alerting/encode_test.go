package alerting

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testForecast is a forecast rule's event data at a 15-second step and a
// 10-minute horizon: 40 points.
func testForecast() ForecastData {
	at := time.Date(2026, 11, 25, 14, 34, 0, 0, time.UTC)
	d := ForecastData{Group: "traffic", Rule: "qps", Labels: map[string]string{"model": "m", "pod": "p0"}, Series: `qps{model="m",pod="p0"}`,
		Origin: at, LastValue: 12.5, StepSeconds: 15, HorizonSeconds: 600, Model: "auto", Level: 0.9,
		Peak: 14.25, PeakTime: at.Add(5 * time.Minute), UpperPeak: 17.125,
		Accuracy: ForecastAccuracy{LeadSeconds: 600, N: 30, MAE: 1.5, Coverage: 0.9, NaiveMAE: 1.75}}
	for i := range 40 {
		v := 12 + math.Sin(float64(i)/7)
		d.Points = append(d.Points, ForecastPoint{Time: at.Add(time.Duration(i+1) * 15 * time.Second),
			Mean: JSONFloat(v), Lower: JSONFloat(v - 1.0/3), Upper: JSONFloat(v + 2.0/3)})
	}
	return d
}

// BenchmarkForecastEvent: a forecast event made and encoded for NATS, as
// a forecast rule does for each series every evaluation.
func BenchmarkForecastEvent(b *testing.B) {
	d := testForecast()
	for b.Loop() {
		ev, err := NewForecastEvent(d, "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ev.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAppendJSONFloat: a figure is written byte for byte as encoding/json
// writes a float64, at every magnitude and at the bounds of its exponent
// form.
func TestAppendJSONFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	xs := []float64{0, math.Copysign(0, -1), 1, -1, 1e-6, 9.999999e-7, 1e-7, 1e20, 1e21, 123456789e13, 5e-324,
		math.MaxFloat64, -math.SmallestNonzeroFloat64, 0.1, 1.0 / 3, 12.5, -2.5e-10}
	for range 20000 {
		xs = append(xs, math.Ldexp(rng.Float64()-0.5, rng.IntN(2000)-1000))
	}
	for _, x := range xs {
		want, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONFloat(nil, x); string(got) != string(want) {
			t.Fatalf("%v: wrote %s, encoding/json writes %s", x, got, want)
		}
		if got, _ := JSONFloat(x).MarshalJSON(); string(got) != string(want) {
			t.Fatalf("JSONFloat(%v): wrote %s, encoding/json writes %s", x, got, want)
		}
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got, _ := JSONFloat(x).MarshalJSON(); string(got) != "null" {
			t.Errorf("JSONFloat(%v): wrote %s, want null", x, got)
		}
	}
}

// TestForecastPointEncoding: a point's own encoder writes what encoding/json
// writes for its fields, undefined figures as null, times in any zone and
// to the nanosecond; a year past 9999 is an error, as time.Time's own.
func TestForecastPointEncoding(t *testing.T) {
	type plain struct {
		Time  time.Time `json:"time"`
		Mean  JSONFloat `json:"mean"`
		Lower JSONFloat `json:"lower"`
		Upper JSONFloat `json:"upper"`
	}
	rng := rand.New(rand.NewPCG(7, 8))
	zone := time.FixedZone("x", 5*3600+30*60)
	figure := func() JSONFloat {
		switch rng.IntN(8) {
		case 0:
			return JSONFloat(math.NaN())
		case 1:
			return JSONFloat(math.Inf(-1))
		}
		return JSONFloat(math.Ldexp(rng.NormFloat64(), rng.IntN(80)-40))
	}
	for i := range 2000 {
		at := time.Unix(rng.Int64N(4e9), rng.Int64N(1e9))
		if i%3 == 0 {
			at = at.In(zone)
		} else if i%3 == 1 {
			at = at.UTC().Truncate(time.Second)
		}
		p := ForecastPoint{Time: at, Mean: figure(), Lower: figure(), Upper: figure()}
		got, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(plain(p))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("wrote %s, encoding/json writes %s", got, want)
		}
	}
	if _, err := json.Marshal(ForecastPoint{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("a point in the year 10000 encoded; want an error")
	}
}

// TestEventEncode: Encode writes what json.Marshal writes for the event,
// escapes and all, for each kind of event and for one without data.
func TestEventEncode(t *testing.T) {
	f := Finding{Kind: "anomaly", Group: "latency", Rule: "ttft_spike", Detector: "sigma",
		Labels: map[string]string{"pod": "p<0>&"}, Series: `ttft{pod="p<0>&"}`, WindowStart: time.Unix(100, 0), WindowEnd: time.Unix(160, 5),
		Value: 50, ValueTime: time.Unix(160, 5), Expected: 10.3, Lower: math.Inf(-1), Upper: 10.9, Score: 41.2, Severity: "critical"}
	fe, err := NewFindingEvent(f, "/src?a=<b>")
	if err != nil {
		t.Fatal(err)
	}
	ce, err := NewForecastEvent(testForecast(), "")
	if err != nil {
		t.Fatal(err)
	}
	bare := Event{SpecVersion: CloudEventsSpecVersion, ID: "x", Source: "/s", Type: "t", Time: time.Unix(1, 0).UTC(), DataContentType: "application/json"}
	for _, ev := range []Event{fe, ce, bare} {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ev.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("Encode wrote\n%s\njson.Marshal writes\n%s", got, want)
		}
	}
}

// TestForecastEncoding: a forecast's data is written byte for byte as
// json.Marshal writes ForecastData, with and without its optional parts,
// escapes and undefined figures included.
func TestForecastEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	figure := func() JSONFloat {
		if rng.IntN(6) == 0 {
			return JSONFloat(math.NaN())
		}
		return JSONFloat(math.Ldexp(rng.NormFloat64(), rng.IntN(60)-30))
	}
	for i := range 500 {
		d := testForecast()
		d.LastValue, d.Peak, d.UpperPeak = figure(), figure(), figure()
		d.Accuracy.MAE, d.Accuracy.Coverage = figure(), figure()
		switch i % 4 {
		case 0:
			d.Points = nil
		case 1:
			d.Points = []ForecastPoint{}
		case 2:
			d.Points = d.Points[:rng.IntN(len(d.Points))+1]
			d.Fallback, d.Labels = "naive", map[string]string{"pod": `p<"0">&` + string(rune('a'+i%26))}
		case 3:
			d.Labels = nil
			d.Horizons = []ForecastHorizon{{HorizonSeconds: 120, Peak: figure(), PeakTime: d.Origin, UpperPeak: figure()},
				{HorizonSeconds: 600, Peak: figure(), PeakTime: d.PeakTime.In(time.FixedZone("x", 3600)), UpperPeak: figure()}}
		}
		for j := range d.Points {
			d.Points[j].Mean, d.Points[j].Upper = figure(), figure()
		}
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeForecast(&d)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("case %d: wrote\n%s\njson.Marshal writes\n%s", i, got, want)
		}
	}
	d := testForecast()
	d.Points[3].Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := encodeForecast(&d); err == nil || !strings.Contains(err.Error(), "point 4") {
		t.Errorf("a point in the year 10000: error %v, want one naming point 4", err)
	}
}

// TestForecastEncodingFields: the fields encodeForecast writes around the
// points are ForecastData's, in its order, with the same types and tags,
// so that a field added to ForecastData cannot be left out of its events.
func TestForecastEncodingFields(t *testing.T) {
	var parts []reflect.StructField
	for _, typ := range []reflect.Type{reflect.TypeFor[forecastHead](), reflect.TypeFor[forecastTail]()} {
		for i := range typ.NumField() {
			parts = append(parts, typ.Field(i))
		}
	}
	all := reflect.TypeFor[ForecastData]()
	var want []reflect.StructField
	for i := range all.NumField() {
		if f := all.Field(i); f.Name != "Points" {
			want = append(want, f)
		}
	}
	if len(parts) != len(want) {
		t.Fatalf("forecastHead and forecastTail have %d fields, ForecastData %d besides Points", len(parts), len(want))
	}
	for i, f := range want {
		if p := parts[i]; p.Name != f.Name || p.Type != f.Type || p.Tag != f.Tag {
			t.Errorf("field %d: %s %v `%s` around the points, ForecastData has %s %v `%s`", i+1, p.Name, p.Type, p.Tag, f.Name, f.Type, f.Tag)
		}
	}
	if f, _ := all.FieldByName("Points"); f.Index[0] != reflect.TypeFor[forecastHead]().NumField() {
		t.Errorf("Points is field %d of ForecastData; encodeForecast writes it after the %d of forecastHead", f.Index[0]+1, reflect.TypeFor[forecastHead]().NumField())
	}
}
