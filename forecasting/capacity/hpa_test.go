package capacity

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestHPADecide(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	sec := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// One sync every 15 s; capacity 10 a replica.
	f := func(name string, h HPA, start int, metrics []float64, want []int) {
		t.Helper()
		st := HPAState{Replicas: start}
		got := make([]int, len(metrics))
		for i, m := range metrics {
			st = h.Decide(st, m, 10, sec(15*i))
			got[i] = st.Replicas
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: replicas %v, want %v", name, got, want)
		}
	}
	// 25 on 2: ratio 1.25, up to 3; 31 on 3: ratio 1.03, within the
	// tolerance; 100: 10 wanted, at most max(2·3, 3+4) = 7 in one period;
	// then 10.
	f("tolerance and the scale-up limit", HPA{}, 2, []float64{25, 31, 100, 100}, []int{3, 3, 7, 10})
	// A fall waits until the highest recommendation of the last 5 minutes
	// is out of the window: 10 was recommended at 45 s, so the fall to 2
	// comes at 345 s (sync 23), not before.
	down := []float64{25, 31, 100, 100}
	wantDown := []int{3, 3, 7, 10}
	for range 19 {
		down = append(down, 20)
		wantDown = append(wantDown, 10)
	}
	down = append(down, 20)
	wantDown = append(wantDown, 2)
	f("the scale-down stabilisation", HPA{}, 2, down, wantDown)
	f("no window, no tolerance", HPA{ScaleDownWindow: -1, Tolerance: -1}, 2, []float64{21, 9, 31}, []int{3, 1, 4})
	f("clamped, unknown metric", HPA{MinReplicas: 2, MaxReplicas: 6}, 2, []float64{1000, math.NaN(), 0}, []int{6, 6, 6})
	// A target of 8: 8.5 on 1 is within the tolerance, 9 is not; 20 on 2
	// is 1.25 of the target: ⌈20/8⌉.
	f("a target of 0.8", HPA{Target: 0.8}, 1, []float64{8.5, 9, 20}, []int{1, 2, 3})
	f("no replicas: not scaled", HPA{}, 0, []float64{50}, []int{0})
}

func TestLoadMean(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	s := func(sec int) time.Time { return at.Add(time.Duration(sec) * time.Second) }
	l := Load{Start: at, Step: time.Minute, Values: []float64{10, 20, math.NaN(), 40}}
	for _, c := range []struct {
		from, to int
		want     float64
	}{
		{30, 90, 15},           // half of each of the first two steps
		{0, 60, 10},            // one whole step
		{15, 30, 10},           // inside one step
		{180, 240, 40},         // the last step
		{-30, 30, math.NaN()},  // before the start
		{90, 150, math.NaN()},  // over an unknown step
		{210, 270, math.NaN()}, // past the end
		{60, 60, math.NaN()},   // empty
	} {
		got := l.Mean(s(c.from), s(c.to))
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("mean over [%ds, %ds) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

func TestHPARun(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	l := Load{Start: at, Step: time.Minute, Values: []float64{10, 10, 40, 40, 40}}
	asks := HPA{}.Run(l, 1, 1, 10)
	// From 1:00 every 15 s to 4:45. The metric is the mean of the last
	// minute: 10 until 2:00; 17.5 at 2:15 (ratio 1.75 on 1: 2), 25 at
	// 2:30 (1.25 on 2: 3), 32.5 at 2:45 (1.08 on 3: within the
	// tolerance), 40 from 3:00 (1.33 on 3: 4).
	want := []int{1, 1, 1, 1, 1, 2, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4}
	if len(asks) != len(want) {
		t.Fatalf("%d asks, want %d", len(asks), len(want))
	}
	for i, a := range asks {
		if a.N != want[i] || !a.At.Equal(at.Add(time.Minute+time.Duration(i)*15*time.Second)) {
			t.Errorf("ask %d: %d at %v, want %d at +%v", i, a.N, a.At.Format("15:04:05"), want[i], time.Minute+time.Duration(i)*15*time.Second)
		}
	}
}

func TestServeAsks(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	l := Load{Start: at, Step: time.Minute, Values: []float64{25, 25, 25}}
	// Two serving; a third asked for at 0:15 serves from 0:45: short 0.75
	// minutes by 5; paid 2·0.25 + 3·2.75.
	got := ServeAsks(l, 0, []Ask{{at.Add(15 * time.Second), 3}, {at.Add(time.Minute), 3}}, 2, 10, 30*time.Second)
	want := Provisioning{ReplicaMinutes: 8.75, Minutes: 3, UnderMinutes: 0.75, WorstShortfall: 5, Changes: 1}
	if got != want {
		t.Errorf("tally %+v, want %+v", got, want)
	}
	// Asks at the start of each step tally as Serve does.
	asks := []int{3, 2, 4}
	var at3 []Ask
	for j, n := range asks {
		at3 = append(at3, Ask{l.At(j), n})
	}
	if a, b := ServeAsks(l, 0, at3, 2, 10, 90*time.Second), Serve(l, 0, asks, 2, 10, 90*time.Second); a != b {
		t.Errorf("asks at each step: %+v; Serve: %+v", a, b)
	}
}

func TestServeAsksBy(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	l := Load{Start: at, Step: time.Minute, Values: []float64{25, 25, 5, 5, 30}}
	asks := StepAsks(l, 0, []int{3, 3, 1, 1, 3})
	// Two-minute periods: [0, 2) two replicas serving, a third from 0:30;
	// [2, 4) one; [4, 5) one serving, two starting until 4:30.
	got := ServeAsksBy(l, 0, asks, 2, 10, 30*time.Second, 2*time.Minute)
	want := []Provisioning{
		{ReplicaMinutes: 6, Minutes: 2, UnderMinutes: 0.5, WorstShortfall: 5, Changes: 1},
		{ReplicaMinutes: 2, Minutes: 2, Changes: 1},
		{ReplicaMinutes: 3, Minutes: 1, UnderMinutes: 0.5, WorstShortfall: 20, Changes: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("by period %+v, want %+v", got, want)
	}
	var sum Provisioning
	for _, p := range want {
		sum.Add(p)
	}
	if whole := ServeAsks(l, 0, asks, 2, 10, 30*time.Second); whole != sum {
		t.Errorf("whole %+v, the periods add up to %+v", whole, sum)
	}
}
