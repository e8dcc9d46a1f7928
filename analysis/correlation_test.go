package analysis_test

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/inferwatch/inferwatch/analysis"
)

// Five points by hand: x̄ = 3, ȳ = 4, Σdx·dy = 6, Σdx² = 10, Σdy² = 6, so
// r = 6/√60 = 0.7746. t = r·√(3/(1−r²)) = √4.5 = 2.1213 on 3 degrees of
// freedom: two-sided p = 0.1240.
func ExamplePearson() {
	x := []float64{1, 2, 3, 4, 5}
	y := []float64{2, 4, 5, 4, 5}
	c := analysis.Pearson(x, y)
	fmt.Printf("r=%.4f p=%.4f n=%d\n", c.R, c.P, c.N)
	// Output:
	// r=0.7746 p=0.1240 n=5
}

// Ties share the average rank: y = 2, 4, 5, 4, 5 ranks as 1, 2.5, 4.5, 2.5,
// 4.5. Against x's ranks 1…5 (mean 3 each): Σd·d = 7, Σdx² = 10,
// Σdy² = 9, so ρ = 7/√90 = 0.7379.
func ExampleSpearman() {
	x := []float64{1, 2, 3, 4, 5}
	y := []float64{2, 4, 5, 4, 5}
	fmt.Println(analysis.Ranks(y))
	c := analysis.Spearman(x, y)
	fmt.Printf("rho=%.4f n=%d\n", c.R, c.N)
	// Output:
	// [1 2.5 4.5 2.5 4.5]
	// rho=0.7379 n=5
}

// The table of critical values of r: with n = 12 (10 degrees of freedom)
// r = 0.5760 is significant at exactly the two-sided 5 % level, and with
// n = 30, r = 0.4629 at the 1 % level.
func ExampleCorrelationPValue() {
	fmt.Printf("%.4f\n", analysis.CorrelationPValue(0.5760, 12))
	fmt.Printf("%.4f\n", analysis.CorrelationPValue(0.4629, 30))
	// Output:
	// 0.0500
	// 0.0100
}

// y repeats x three steps later: the strongest correlation is at lag +3
// (y follows x), where it is exact.
func ExampleCrossCorrelation() {
	const step = 1000
	var xt, yt []int64
	var x, y []float64
	for i := range 60 {
		v := math.Sin(float64(i) * 0.7)
		xt = append(xt, int64(i)*step)
		x = append(x, v)
		yt = append(yt, int64(i+3)*step)
		y = append(y, v)
	}
	lc := analysis.CrossCorrelation(xt, x, yt, y, step, 5, 30)
	fmt.Printf("lag=%d r=%.4f n=%d\n", lc.Lag, lc.R, lc.N)
	// Output:
	// lag=3 r=1.0000 n=60
}

func ExampleJudge() {
	for _, c := range []analysis.Correlation{
		{R: 0.58, P: 1e-9, N: 200},
		{R: 0.31, P: 1e-6, N: 200},
		{R: 0.90, P: 0.001, N: 12},
		{R: -0.55, P: 0.02, N: 30},
	} {
		v := analysis.Judge(c, analysis.CouplingThresholds{})
		fmt.Println(v.Coupled, v.Reason)
	}
	// Output:
	// true coupled
	// false |r|=0.31 < 0.5
	// false n=12 < 30
	// false p=0.02 ≥ 0.01
}

// naivePearson is an independent textbook computation: one pass of raw
// sums, r = (nΣxy − ΣxΣy) / √((nΣx² − (Σx)²)(nΣy² − (Σy)²)), in big
// enough precision for the values the tests use.
func naivePearson(x, y []float64) (float64, int) {
	var n, sx, sy, sxx, syy, sxy float64
	for i := range x {
		if math.IsNaN(x[i]) || math.IsInf(x[i], 0) || math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			continue
		}
		n++
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		syy += y[i] * y[i]
		sxy += x[i] * y[i]
	}
	return (n*sxy - sx*sy) / math.Sqrt((n*sxx-sx*sx)*(n*syy-sy*sy)), int(n)
}

// naiveRanks ranks by counting: rank = 1 + #smaller + (#equal − 1)/2.
func naiveRanks(x []float64) []float64 {
	r := make([]float64, len(x))
	for i, a := range x {
		less, equal := 0, 0
		for _, b := range x {
			if b < a {
				less++
			} else if b == a {
				equal++
			}
		}
		r[i] = 1 + float64(less) + float64(equal-1)/2
	}
	return r
}

func TestPearsonSpearmanCrossCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 50 {
		n := 3 + rng.IntN(300)
		x := make([]float64, n)
		y := make([]float64, n)
		for i := range x {
			x[i] = float64(rng.IntN(20)) // many ties
			y[i] = 0.5*x[i] + rng.NormFloat64()*3
			switch rng.IntN(25) {
			case 0:
				x[i] = math.NaN()
			case 1:
				y[i] = math.Inf(-1)
			}
		}
		wantR, wantN := naivePearson(x, y)
		got := analysis.Pearson(x, y)
		if got.N != wantN || math.Abs(got.R-wantR) > 1e-9 {
			t.Errorf("trial %d: Pearson = %v (n %d), naive %v (n %d)", trial, got.R, got.N, wantR, wantN)
		}
		var fx, fy []float64
		for i := range x {
			if !math.IsNaN(x[i]) && !math.IsInf(y[i], 0) {
				fx = append(fx, x[i])
				fy = append(fy, y[i])
			}
		}
		wantS, _ := naivePearson(naiveRanks(fx), naiveRanks(fy))
		if gotS := analysis.Spearman(x, y); math.Abs(gotS.R-wantS) > 1e-9 || gotS.N != wantN {
			t.Errorf("trial %d: Spearman = %v (n %d), naive %v (n %d)", trial, gotS.R, gotS.N, wantS, wantN)
		}
	}
}

func TestPearsonDegenerate(t *testing.T) {
	f := func(name string, x, y []float64, wantN int) {
		t.Helper()
		c := analysis.Pearson(x, y)
		if !math.IsNaN(c.R) || !math.IsNaN(c.P) || c.N != wantN {
			t.Errorf("%s: Pearson = %+v, want NaN r and p with n=%d", name, c, wantN)
		}
	}
	f("empty", nil, nil, 0)
	f("one point", []float64{1}, []float64{2}, 1)
	f("constant x", []float64{3, 3, 3, 3}, []float64{1, 2, 3, 4}, 4)
	f("all NaN", []float64{math.NaN(), 1}, []float64{1, math.NaN()}, 0)
	// Two points: r = ±1 but no degrees of freedom for a p-value.
	if c := analysis.Pearson([]float64{1, 2}, []float64{5, 3}); c.R != -1 || !math.IsNaN(c.P) {
		t.Errorf("two points: %+v, want r=-1, p=NaN", c)
	}
	// A perfect line with a large offset keeps r = 1 and p = 0.
	x := []float64{1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4}
	if c := analysis.Pearson(x, []float64{2, 4, 6, 8}); c.R != 1 || c.P != 0 {
		t.Errorf("offset line: %+v, want r=1 p=0", c)
	}
}

func TestRollingCorrelation(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6}
	y := []float64{1, 2, 3, 3, 2, 1}
	got := analysis.RollingCorrelation(x, y, 3)
	// Windows: [1 2 3]/[1 2 3] → 1; [2 3 4]/[2 3 3] → 0.8660;
	// [3 4 5]/[3 3 2] → −0.8660; [4 5 6]/[3 2 1] → −1.
	want := []float64{math.NaN(), math.NaN(), 1, math.Sqrt(3) / 2, -math.Sqrt(3) / 2, -1}
	for i := range want {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("RollingCorrelation = %v, want %v", got, want)
		}
	}
}

func TestCrossCorrelationSignAndGaps(t *testing.T) {
	const step = 10
	rng := rand.New(rand.NewPCG(9, 10))
	// x is white noise; y(t) = x(t − 2·step) observed with gaps: y
	// follows x by 2 steps. Swapping the roles gives lag −2.
	n := 400
	xt := make([]int64, n)
	x := make([]float64, n)
	for i := range x {
		xt[i] = int64(i) * step
		x[i] = rng.NormFloat64()
	}
	var yt []int64
	var y []float64
	for i := 2; i < n; i++ {
		if i%7 == 0 {
			continue
		}
		yt = append(yt, int64(i)*step)
		y = append(y, x[i-2]+0.1*rng.NormFloat64())
	}
	lc := analysis.CrossCorrelation(xt, x, yt, y, step, 5, 0)
	if lc.Lag != 2 || lc.R < 0.95 {
		t.Errorf("y follows x: lag %d r %v, want lag 2 r > 0.95", lc.Lag, lc.R)
	}
	if len(lc.ByLag) != 11 || math.Abs(lc.ByLag[2+5]-lc.R) > 0 {
		t.Errorf("ByLag %v does not hold r=%v at index 7", lc.ByLag, lc.R)
	}
	if rev := analysis.CrossCorrelation(yt, y, xt, x, step, 5, 0); rev.Lag != -2 || math.Abs(rev.R-lc.R) > 1e-12 {
		t.Errorf("x follows y: lag %d r %v, want lag -2 r %v", rev.Lag, rev.R, lc.R)
	}
	// Too few pairs for any lag.
	if few := analysis.CrossCorrelation(xt[:10], x[:10], xt[:10], x[:10], step, 2, 30); !math.IsNaN(few.R) || few.Lag != 0 {
		t.Errorf("10 points with minPairs 30: %+v, want NaN r", few)
	}
}

func TestPairwisePearson(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	series := make([][]float64, 6)
	for i := range series {
		series[i] = make([]float64, 50)
		for j := range series[i] {
			series[i][j] = rng.NormFloat64() + float64(j*i)/10
		}
	}
	series[2][7] = math.NaN() // takes the fallback path
	for j := range series[4] {
		series[4][j] = 5 // constant
	}
	count := 0
	analysis.PairwisePearson(series, func(i, j int, c analysis.Correlation) {
		count++
		want := analysis.Pearson(series[i], series[j])
		if want.N != c.N || math.IsNaN(want.R) != math.IsNaN(c.R) || math.Abs(want.R-c.R) > 1e-12 || math.Abs(want.P-c.P) > 1e-9 {
			t.Errorf("pair %d,%d: %+v, Pearson gives %+v", i, j, c, want)
		}
	})
	if count != 15 {
		t.Errorf("%d pairs, want 15", count)
	}
}

func BenchmarkPearson240(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := make([]float64, 240), make([]float64, 240)
	for i := range x {
		x[i] = rng.NormFloat64()
		y[i] = x[i] + rng.NormFloat64()
	}
	for b.Loop() {
		analysis.Pearson(x, y)
	}
}

// BenchmarkPairwisePearson1000x240 is every pair among 1,000 series of
// 240 points: 499,500 correlations with their p-values.
func BenchmarkPairwisePearson1000x240(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	series := make([][]float64, 1000)
	for i := range series {
		series[i] = make([]float64, 240)
		for j := range series[i] {
			series[i][j] = rng.NormFloat64()
		}
	}
	for b.Loop() {
		coupled := 0
		analysis.PairwisePearson(series, func(i, j int, c analysis.Correlation) {
			if c.P < 0.01 {
				coupled++
			}
		})
	}
}

// gentd26 is the GenTD26 serving trace, kept outside the repository.
var gentd26 = filepath.Join("..", "..", "shared", "data", "gentd26")

// gentdSeries is one container's samples: timestamps in unix ms.
type gentdSeries struct {
	t []int64
	v []float64
}

// readGentd reads a GenTD26 metric file (columns value, timestamp_anon,
// container_ip in any order) into one series per container, dropping rows
// whose container is "None"/"NULL"/empty. Timestamps are seconds in the
// file and milliseconds here.
func readGentd(t *testing.T, name string) map[string]*gentdSeries {
	t.Helper()
	f, err := os.Open(filepath.Join(gentd26, name))
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("GenTD26 data not found at %s: the real-data test needs it", gentd26)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		t.Fatalf("%s: reading header: %v", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, h := range []string{"value", "timestamp_anon", "container_ip"} {
		if _, ok := col[h]; !ok {
			t.Fatalf("%s: no column %q in header %v", name, h, head)
		}
	}
	out := map[string]*gentdSeries{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s:%d: %v", name, line, err)
		}
		ip := rec[col["container_ip"]]
		if ip == "" || ip == "None" || ip == "NULL" {
			continue
		}
		ts, err1 := strconv.ParseFloat(rec[col["timestamp_anon"]], 64)
		v, err2 := strconv.ParseFloat(rec[col["value"]], 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("%s:%d: %v", name, line, err)
		}
		s := out[ip]
		if s == nil {
			s = &gentdSeries{}
			out[ip] = s
		}
		s.t = append(s.t, int64(math.Round(ts*1000)))
		s.v = append(s.v, v)
	}
	return out
}

// quartiles of xs (type 7), for the log.
func quartiles(xs []float64) [3]float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 {
		h := float64(len(s)-1) * p
		lo := int(h)
		if lo+1 >= len(s) {
			return s[lo]
		}
		return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
	}
	return [3]float64{q(0.25), q(0.5), q(0.75)}
}

// TestGenTD26DutyCycleLatency joins the GPU duty cycle of each container
// with its end-to-end inference latency per (container, timestamp) and
// checks the pooled Pearson r the dataset is known for (≈ 0.58 over 34,419
// pairs). It then analyses each container on its own and logs the
// coupling of duty cycle with latency and with latency jitter.
func TestGenTD26DutyCycleLatency(t *testing.T) {
	duty := readGentd(t, "pod_gpu_duty_cycle_anon.csv")
	lat := readGentd(t, "pipeline_inference_data_anon.csv")
	const step = 57_000 // the trace's sampling interval, in ms

	ips := make([]string, 0, len(lat))
	for ip := range lat {
		if duty[ip] != nil {
			ips = append(ips, ip)
		}
	}
	slices.Sort(ips)

	var allX, allY []float64
	type perContainer struct {
		pearson, spearman analysis.Correlation
		lag               analysis.LagCorrelation
		jitterP, jitterS  analysis.Correlation
		jitterLag         analysis.LagCorrelation
		// Verdicts with the default thresholds, in the same order.
		pCoupled, sCoupled, jpCoupled, jsCoupled bool
	}
	var rows []perContainer
	for _, ip := range ips {
		d, l := duty[ip], lat[ip]
		ts, x, y := analysis.Align(d.t, d.v, l.t, l.v, step)
		allX = append(allX, x...)
		allY = append(allY, y...)
		if len(ts) < analysis.DefaultCouplingMinN {
			continue
		}
		var row perContainer
		row.pearson = analysis.Pearson(x, y)
		row.spearman = analysis.Spearman(x, y)
		if r, _ := naivePearson(x, y); math.Abs(r-row.pearson.R) > 1e-9 {
			t.Errorf("container %s: Pearson %v, naive %v", ip, row.pearson.R, r)
		}
		// Duty cycle is dense (every step), latency sparse: lag the
		// dense series against the sparse one on the shared grid.
		dt, dv := analysis.Resample(d.t, d.v, step)
		row.lag = analysis.CrossCorrelation(dt, dv, ts, y, step, 10, 0)

		// Latency jitter: standard deviation over the last 30 minutes
		// of latency samples (at least 5), at each latency sample.
		lt, lv := analysis.Resample(l.t, l.v, step)
		jit := analysis.RollingStd(lt, lv, 30*60*1000, 5)
		jt, jx, jy := analysis.Align(dt, dv, lt, jit, step)
		row.jitterP = analysis.Pearson(jx, jy)
		row.jitterS = analysis.Spearman(jx, jy)
		row.jitterLag = analysis.CrossCorrelation(dt, dv, jt, jy, step, 10, 0)

		row.pCoupled = analysis.Judge(row.pearson, analysis.CouplingThresholds{}).Coupled
		row.sCoupled = analysis.Judge(row.spearman, analysis.CouplingThresholds{}).Coupled
		row.jpCoupled = analysis.Judge(row.jitterP, analysis.CouplingThresholds{}).Coupled
		row.jsCoupled = analysis.Judge(row.jitterS, analysis.CouplingThresholds{}).Coupled
		for _, c := range []analysis.Correlation{row.pearson, row.spearman, row.lag.Correlation} {
			if !(c.R >= -1 && c.R <= 1) && !math.IsNaN(c.R) {
				t.Errorf("container %s: r = %v out of range", ip, c.R)
			}
		}
		rows = append(rows, row)
	}

	pooled := analysis.Pearson(allX, allY)
	t.Logf("pooled duty cycle vs latency: r=%.4f p=%.3g n=%d over %d containers", pooled.R, pooled.P, pooled.N, len(ips))
	if pooled.N != 34419 {
		t.Errorf("pooled join has %d pairs, want 34419", pooled.N)
	}
	if math.Abs(pooled.R-0.58) > 0.005 {
		t.Errorf("pooled Pearson r = %.4f, want ≈ 0.58", pooled.R)
	}
	if r, _ := naivePearson(allX, allY); math.Abs(r-pooled.R) > 1e-9 {
		t.Errorf("pooled Pearson %v, naive %v", pooled.R, r)
	}

	summarize := func(name string, get func(perContainer) (analysis.Correlation, bool)) {
		var rs []float64
		coupled, significant := 0, 0
		for _, row := range rows {
			c, ok := get(row)
			if math.IsNaN(c.R) {
				continue
			}
			rs = append(rs, c.R)
			if ok {
				coupled++
			}
			if c.P < analysis.DefaultCouplingMaxP {
				significant++
			}
		}
		if len(rs) == 0 {
			t.Errorf("%s: no container had a defined coefficient", name)
			return
		}
		q := quartiles(rs)
		t.Logf("%-26s containers=%d p<0.01=%d coupled=%d  r quartiles: %.3f / %.3f / %.3f", name, len(rs), significant, coupled, q[0], q[1], q[2])
	}
	summarize("pearson(duty, latency)", func(r perContainer) (analysis.Correlation, bool) { return r.pearson, r.pCoupled })
	summarize("spearman(duty, latency)", func(r perContainer) (analysis.Correlation, bool) { return r.spearman, r.sCoupled })
	summarize("pearson(duty, jitter)", func(r perContainer) (analysis.Correlation, bool) { return r.jitterP, r.jpCoupled })
	summarize("spearman(duty, jitter)", func(r perContainer) (analysis.Correlation, bool) { return r.jitterS, r.jsCoupled })

	lags := func(name string, get func(perContainer) analysis.LagCorrelation) {
		hist := map[int]int{}
		var rs []float64
		for _, row := range rows {
			lc := get(row)
			if math.IsNaN(lc.R) {
				continue
			}
			hist[lc.Lag]++
			rs = append(rs, lc.R)
		}
		keys := make([]int, 0, len(hist))
		for k := range hist {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var s string
		for _, k := range keys {
			s += fmt.Sprintf(" %+d:%d", k, hist[k])
		}
		if len(rs) > 0 {
			q := quartiles(rs)
			t.Logf("%-26s best lag (steps of 57 s) histogram:%s; r at best lag quartiles %.3f / %.3f / %.3f", name, s, q[0], q[1], q[2])
		}
	}
	lags("lag(duty → latency)", func(r perContainer) analysis.LagCorrelation { return r.lag })
	lags("lag(duty → jitter)", func(r perContainer) analysis.LagCorrelation { return r.jitterLag })
	if len(rows) < 50 {
		t.Errorf("only %d containers with ≥ %d pairs", len(rows), analysis.DefaultCouplingMinN)
	}
}
