package forecasting

import (
	"math"
	"slices"
	"testing"
	"time"
)

// fixed is a model whose forecasts are set by hand.
type fixed struct{ out []float64 }

func (m *fixed) name() string          { return "fixed" }
func (m *fixed) need() int             { return 1 }
func (m *fixed) fit(y []float64) error { return nil }
func (m *fixed) update(y float64)      {}
func (m *fixed) predict(out []float64) { copy(out, m.out) }

func TestBoundedByHand(t *testing.T) {
	in := &fixed{out: []float64{20, -10, 7, math.NaN(), 11.5, math.Inf(1)}}
	m := &bounded{model: in}
	out := make([]float64, len(in.out))
	// Fitted on 2..5: the range is 3, the bound [2 − 6, 5 + 6].
	if err := m.fit([]float64{3, 2, 5, 4}); err != nil {
		t.Fatal(err)
	}
	m.predict(out)
	want := []float64{11, -4, 7, math.NaN(), 11, 11}
	if !slices.EqualFunc(out, want, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
		t.Fatalf("fitted on 2..5: %v, want %v", out, want)
	}
	// An update widens the range: 0..5, the bound [−10, 15].
	m.update(0)
	m.predict(out)
	if out[0] != 15 || out[1] != -10 || out[4] != 11.5 {
		t.Fatalf("after an update to 0: %v, want 15, −10 and 11.5 unchanged", out)
	}
	// A NaN or an infinity fed in is not seen: the bound stays.
	m.update(math.NaN())
	m.update(math.Inf(-1))
	m.predict(out)
	if out[0] != 15 || out[1] != -10 {
		t.Fatalf("after a NaN and −Inf: %v, want 15 and −10", out)
	}
	// A refit forgets the old range.
	if err := m.fit([]float64{10, 10}); err != nil {
		t.Fatal(err)
	}
	m.predict(out)
	if out[0] != 10 || out[1] != 10 || out[2] != 10 {
		t.Fatalf("refitted on a constant 10: %v, want 10s", out)
	}
	if m.name() != "fixed" || m.need() != 1 {
		t.Fatalf("the wrapper hides its model: %s, %d", m.name(), m.need())
	}
}

// hw_log on a disk's write bytes (0 to 10⁸ and back each step) keeps every mean within twice the range seen beyond it.
func TestLogTrendDoesNotRunAway(t *testing.T) {
	y := readValues(t, "nab/data/realAWSCloudwatch/ec2_disk_write_bytes_c0d644.csv")
	r, err := Backtest(y, 5*time.Minute, ModelHWLog, 12, 0.9, 288)
	if err != nil {
		t.Fatal(err)
	}
	hi, lo, seen := math.Inf(-1), math.Inf(1), 0
	var worst float64
	for _, row := range r.Rows {
		for ; seen <= row.Origin; seen++ {
			hi, lo = max(hi, y[seen]), min(lo, y[seen])
		}
		worst = max(worst, row.Yhat/(3*hi-2*lo))
	}
	t.Logf("hw_log 1h ahead: MAE %.4g, naive %.4g; highest forecast %.3f of the bound", r.MAE, r.NaiveMAE, worst)
	if worst > 1.01 {
		t.Errorf("a forecast reached %.3g times the bound of twice the range beyond it", worst)
	}
	if r.MAE > 3*r.NaiveMAE {
		t.Errorf("MAE %.4g, more than 3 times the last value's %.4g", r.MAE, r.NaiveMAE)
	}
}
