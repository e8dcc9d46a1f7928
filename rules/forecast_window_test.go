package rules

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/ingest"
)

// TestForecastRuleWindowKeepsOnlyTheNewest: after each evaluation the
// window of a forecast rule holds only each series' newest sample (its
// forecaster holds the history). After a gap longer than the forecaster
// fills, the series is fitted on the samples of the lookback before the
// gap, read from its forecaster, and the new ones: as a new forecaster
// fitted on them (the held samples as the float32s it keeps, the newest
// before the gap as it came) and fed the rest.
func TestForecastRuleWindowKeepsOnlyTheNewest(t *testing.T) {
	full := hourly("a", 8*60, 1, 0, 0)
	gapped := ingest.Series{Labels: full.Labels}
	for i, ts := range full.Timestamps {
		if i < 400 || i >= 470 { // 70 steps missing: more than the period of 60 the forecaster fills
			gapped.Timestamps = append(gapped.Timestamps, ts)
			gapped.Values = append(gapped.Values, full.Values[i])
		}
	}
	store := &exprStore{byExpr: map[string][]ingest.Series{"rate": {gapped}}}
	g := forecastGroups()[0]
	rule, err := newForecastRule(g, g.Rules[0])
	if err != nil {
		t.Fatal(err)
	}
	r := rule.(*forecastRule)
	env := &Env{Querier: store, Interval: time.Minute}
	at := func(minute int) time.Time { return t0.Add(time.Duration(minute) * time.Minute) }
	held := func() int {
		n := 0
		for _, b := range r.w.series {
			n += len(b.t)
		}
		return n
	}
	for _, m := range []int{380, 390, 399} {
		res, err := r.Eval(context.Background(), at(m), env)
		if err != nil {
			t.Fatal(err)
		}
		if held() != 1 || len(res.Forecasts) != 1 {
			t.Fatalf("after minute %d: the window holds %d samples, %d forecasts; want 1 and 1", m, held(), len(res.Forecasts))
		}
	}
	if res, err := r.Eval(context.Background(), at(430), env); err != nil || held() != 1 || res.Scored != 0 {
		t.Fatalf("in the gap: %v, %d samples held, %d scored", err, held(), res.Scored)
	}
	from := r.from // the window's samples before the gap are those after it
	for _, c := range []struct{ minute, scored int }{{470, 1}, {479, 9}} {
		res, err := r.Eval(context.Background(), at(c.minute), env)
		if err != nil {
			t.Fatal(err)
		}
		if held() != 1 || res.Scored != c.scored {
			t.Fatalf("at minute %d after the gap: %d samples held, %d scored; want 1 and %d", c.minute, held(), res.Scored, c.scored)
		}
	}

	want, err := forecasting.New(r.opts)
	if err != nil {
		t.Fatal(err)
	}
	stepMs := time.Minute.Milliseconds()
	first := (from-full.Timestamps[0])/stepMs + 1
	data := make([]float64, 470-first+1)
	for i := range data {
		data[i] = math.NaN()
		if k := first + int64(i); k < 400 {
			data[i] = float64(float32Below(full.Values[k]))
		}
	}
	data[399-first] = full.Values[399]
	data[len(data)-1] = full.Values[470]
	if err := want.Fit(full.Timestamps[first], data); err != nil {
		t.Fatal(err)
	}
	for i := 471; i <= 479; i++ {
		if err := want.Update(full.Timestamps[i], full.Values[i]); err != nil {
			t.Fatal(err)
		}
		if want.RefitDue() {
			if err := want.Refit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := r.series[full.Labels.String()]
	if got, w := s.f.Forecast(), want.Forecast(); !reflect.DeepEqual(got, w) || got.Origin != full.Timestamps[479] {
		t.Fatalf("after the gap: %+v\nwant %+v", got, w)
	}
}

// float32Below is v as a forecaster's history keeps it: the float32 at
// or below it.
func float32Below(v float64) float32 {
	f := float32(v)
	if float64(f) > v {
		f = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	return f
}
