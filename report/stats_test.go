package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

func ExampleHistogramQuantile() {
	// 100 requests: 50 under 0.1 s, 40 more under 0.5 s, 10 over 1 s.
	bs := []Bucket{{0.1, 50}, {0.5, 90}, {1, 90}, {math.Inf(1), 100}}
	fmt.Printf("P50 %.3f s, P75 %.3f s, P99 %.3f s\n", HistogramQuantile(0.5, bs), HistogramQuantile(0.75, bs), HistogramQuantile(0.99, bs))
	// Output: P50 0.100 s, P75 0.350 s, P99 1.000 s
}

func ExampleBurnRate() {
	// 0.5 % errors against a 99.9 % objective: the budget goes five times
	// as fast as it lasts, a 30-day budget in six days.
	fmt.Printf("%.1f\n", BurnRate(0.005, 0.999))
	// Output: 5.0
}

func TestHistogramQuantile(t *testing.T) {
	f := func(q float64, bs []Bucket, want float64) {
		t.Helper()
		got := HistogramQuantile(q, bs)
		if !(math.IsNaN(want) && math.IsNaN(got)) && math.Abs(got-want) > 1e-12 {
			t.Errorf("q %v of %v = %v, want %v", q, bs, got, want)
		}
	}
	inf := math.Inf(1)
	f(0.5, []Bucket{{1, 0}, {inf, 0}}, math.NaN())       // no observations
	f(0.5, []Bucket{{1, 5}, {2, 10}}, math.NaN())        // no +Inf bucket
	f(0.5, []Bucket{{inf, 10}, {2, 10}, {1, 0}}, 1.5)    // unsorted
	f(0.5, []Bucket{{1, 6}, {2, 4}, {inf, 10}}, 1*5/6.0) // a count that decreases is raised
	f(1.2, []Bucket{{1, 6}, {inf, 10}}, math.NaN())      // q out of range
	f(0.95, []Bucket{{1, 6}, {2, 9}, {inf, 10}}, 2)      // in the +Inf bucket: the highest bound
	f(0, []Bucket{{1, 6}, {2, 9}, {inf, 10}}, 0)
}

func TestErrorRatioAndBudget(t *testing.T) {
	if r := ErrorRatio(99, 100); math.Abs(r-0.01) > 1e-12 {
		t.Errorf("ErrorRatio = %v", r)
	}
	if r := ErrorRatio(101, 100); r != 0 {
		t.Errorf("a good count above the total gives %v, want 0", r)
	}
	for _, r := range []float64{ErrorRatio(1, 0), BurnRate(math.NaN(), 0.99), BurnRate(0.1, 1)} {
		if !math.IsNaN(r) {
			t.Errorf("undefined figure %v, want NaN", r)
		}
	}
}

func TestGapsAndCoverage(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(10 * time.Hour)
	var ts []int64
	for m := 60; m <= 600; m++ { // from 01:00, with 03:00-05:00 missing
		if m < 180 || m > 300 {
			ts = append(ts, from.Add(time.Duration(m)*time.Minute).UnixMilli())
		}
	}
	gaps := Gaps(ts, from, to, 10*time.Minute)
	if len(gaps) != 2 || !gaps[0].End.Equal(from.Add(time.Hour)) || !gaps[1].Start.Equal(from.Add(179*time.Minute)) {
		t.Fatalf("gaps %v", gaps)
	}
	if c := Coverage(gaps, from, to); math.Abs(c-(1-(60+122)/600.0)) > 1e-9 {
		t.Errorf("coverage %v", c)
	}
}

func TestScoreForecasts(t *testing.T) {
	a := ScoreForecasts([]ForecastOutcome{
		{Mean: 10, Lower: 8, Upper: 12, Naive: 9, Actual: 11},
		{Mean: 10, Lower: 8, Upper: 12, Naive: 9, Actual: 13},
		{Mean: 10, Lower: 8, Upper: 12, Naive: 9, Actual: 14},
		{Mean: 10, Lower: 8, Upper: 12, Naive: 9, Actual: math.NaN()},
		{Mean: 10, Lower: 8, Upper: 12, Naive: 9, Actual: 10},
	})
	if a.N != 4 || a.MAE != 2 || a.NaiveMAE != 3 || math.Abs(a.Ratio-2/3.0) > 1e-12 || a.Cover != 0.5 || a.LongestAboveRun != 2 || a.AboveUpper != 2 {
		t.Errorf("%+v", a)
	}
}

func parse(t *testing.T, spec string, loc *time.Location) cron.Schedule {
	t.Helper()
	s, err := cron.ParseStandard("CRON_TZ=" + loc.String() + " " + spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPeriodEndAndCatchUp(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	s := parse(t, "30 6 * * *", berlin)
	at := time.Date(2026, 11, 25, 5, 29, 0, 0, time.UTC) // 06:29 in Berlin
	if got, want := PeriodEnd(s, at), time.Date(2026, 11, 24, 6, 30, 0, 0, berlin); !got.Equal(want) {
		t.Errorf("PeriodEnd = %v, want %v", got, want)
	}
	if got := PeriodEnd(s, time.Date(2026, 11, 25, 6, 30, 0, 0, berlin)); !got.Equal(time.Date(2026, 11, 25, 6, 30, 0, 0, berlin)) {
		t.Errorf("at the scheduled time: %v", got)
	}
	// Down from the report of the 20th to the 25th at 09:00: one report,
	// the 25th's.
	last := time.Date(2026, 11, 20, 6, 30, 0, 0, berlin)
	due, ok := CatchUp(s, last, true, time.Date(2026, 11, 25, 9, 0, 0, 0, berlin))
	if !ok || !due.Equal(time.Date(2026, 11, 25, 6, 30, 0, 0, berlin)) {
		t.Errorf("CatchUp = %v %v", due, ok)
	}
	if _, ok := CatchUp(s, due, true, due.Add(time.Hour)); ok {
		t.Error("caught up a report already made")
	}
	if _, ok := CatchUp(s, time.Time{}, false, due); ok {
		t.Error("caught up without any earlier report")
	}
}

func TestPeriodsAcrossClockChanges(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	r := rulefmt.Report{Location: berlin, Period: 24 * time.Hour, Compare: []time.Duration{24 * time.Hour, 7 * 24 * time.Hour}}
	f := func(end time.Time, hours float64, change string) {
		t.Helper()
		p, comps := Periods(r, end)
		if p.Hours != hours || !strings.Contains(p.ClockChange, change) || len(comps) != 2 {
			t.Errorf("period to %v: %v hours, %q", end, p.Hours, p.ClockChange)
		}
		if !p.Start.Equal(time.Date(end.Year(), end.Month(), end.Day()-1, 0, 0, 0, 0, berlin)) {
			t.Errorf("period starts %v", p.Start)
		}
		if comps[1].Label != "week before" || comps[1].End.In(berlin).Hour() != 0 {
			t.Errorf("week before %+v", comps[1])
		}
	}
	f(time.Date(2026, 3, 30, 0, 0, 0, 0, berlin), 23, "went forward by 1 hour")
	f(time.Date(2026, 10, 26, 0, 0, 0, 0, berlin), 25, "went back by 1 hour")
	f(time.Date(2026, 11, 26, 0, 0, 0, 0, berlin), 24, "")
}

func TestRetainAndLastEnd(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"daily-2026-11-20T0000+0100", "daily-2026-11-21T0000+0100", "daily-2026-11-22T0000+0100"} {
		for _, ext := range []string{".html", ".json"} {
			os.WriteFile(filepath.Join(dir, n+ext), nil, 0o644)
		}
	}
	os.WriteFile(filepath.Join(dir, "daily-eu-2026-11-19T0000+0100.json"), nil, 0o644) // another report's
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
	end, ok, err := LastEnd(dir, "daily")
	if err != nil || !ok || !end.Equal(time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("LastEnd from the file names = %v %v %v", end, ok, err)
	}
	removed, err := Retain(dir, "daily", 2)
	if err != nil || len(removed) != 2 || !strings.HasSuffix(removed[0], "daily-2026-11-20T0000+0100.html") {
		t.Errorf("removed %q, %v", removed, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 6 {
		t.Errorf("left %q", left)
	}
	if err := SaveState(dir, "daily", time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if end, _, _ := LastEnd(dir, "daily"); !end.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("LastEnd from the state = %v", end)
	}
}

// TestNothingChanged: a document whose figures cross no threshold has no
// sentence, and the page says nothing changed.
func TestNothingChanged(t *testing.T) {
	nan := F(math.NaN())
	d := &Document{Name: "quiet", TimeZone: "UTC", Period: Period{Label: "report", Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), Hours: 24},
		Comparisons: []Period{{Label: "day before"}}, Models: []Model{{ID: "m-a", Name: "a", Labels: map[string]string{"model": "a"},
			Latency:  []Latency{{Kind: "e2e", Title: "End-to-end request latency", Available: true, Quantiles: []Quantile{{Q: 0.99, Value: 2, Previous: []F{1.9}, Change: []F{0.05}}}}},
			Traffic:  Traffic{Requests: Rate{Mean: 5, Peak: 8, SurgeRatio: 1.2, Previous: []F{5}, Change: []F{0}}, Tokens: Rate{Mean: nan, Peak: nan, SurgeRatio: nan, Previous: []F{nan}, Change: []F{nan}}},
			Decay:    DecayReport{Available: true, EtaCurrent: 0.3, TrendPerDay: 0.2, Significant: false},
			Knee:     KneeReport{Concurrency: nan, QPS: nan, Strength: nan, MedianConcurrency: nan, P95Concurrency: nan, ShareBeyond: nan},
			Capacity: CapacityReport{KneeRPS: nan, PerReplica: nan, PeakDemand: 8, Utilization: nan, Headroom: nan, P99: 2, SLOThreshold: nan},
			charts:   modelCharts{latency: map[string][3][]point{}, sloLine: map[string]float64{}}}},
		Anomalies: Episodes{ByKind: map[string]int{}}, Alerts: Episodes{ByKind: map[string]int{}}, Events: EventsRead{Read: true, Subjects: Subjects("inferwatch")}}
	if cs := Changes(d); len(cs) != 0 {
		t.Errorf("changes %+v", cs)
	}
	html, err := HTML(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "Nothing crossed a threshold in this period") || strings.Contains(string(html), "NaN") {
		t.Error("the page does not say nothing changed, or prints NaN")
	}
	// The same model with a significant decay does change.
	d.Models[0].Decay.Significant = true
	if cs := Changes(d); len(cs) != 1 || cs[0].Kind != "decay" || cs[0].Evidence != "m-a-throughput" {
		t.Errorf("changes %+v", cs)
	}
}

func TestLeRegexp(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Second: `1|1\.0`, 2500 * time.Millisecond: `2\.5`, 20 * time.Second: `20|20\.0`} {
		if got := leRegexp(d); got != want {
			t.Errorf("leRegexp(%v) = %q, want %q", d, got, want)
		}
	}
}
