package rules

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Rows that step back are not judged (score 0); a duplicate takes the verdict of the row before it.
func TestJudgeRowsOnlyForwardInTime(t *testing.T) {
	const minute = 60_000
	var ts []int64
	var vs []float64
	add := func(m int64, v float64) { ts, vs = append(ts, m*minute), append(vs, v) }
	for m := range int64(40) {
		add(m, 10+float64(m%5))
	}
	for m := int64(20); m < 25; m++ { // step back to 20 (row 40); 95 would be found if judged
		add(m, 95)
	}
	add(39, 95) // row 45, back at the newest time, not after it
	add(40, 10)
	add(41, 60) // row 47, a spike
	add(41, 10) // a duplicate: row 47's score and decision
	add(42, 11)
	notFed := []int{40, 41, 42, 43, 44, 45, 48}

	rule := SeriesRule{Detector: "sigma", Step: time.Minute}
	var keepTs []int64
	var keepVs []float64
	for i := range ts {
		if !slices.Contains(notFed, i) {
			keepTs, keepVs = append(keepTs, ts[i]), append(keepVs, vs[i])
		}
	}
	want, err := ReplaySeries(context.Background(), rule, keepTs, keepVs)
	if err != nil {
		t.Fatal(err)
	}
	rows, ft, fv := Advancing(ts, vs)
	if !slices.Equal(ft, keepTs) || !slices.Equal(fv, keepVs) {
		t.Fatalf("advancing rows %v, want all but %v", rows, notFed)
	}
	rep, err := ReplaySeries(context.Background(), rule, ft, fv)
	if err != nil {
		t.Fatal(err)
	}
	scores, anomalous := JudgeRows(ts, rows, rep)
	k := 0
	for i := range ts {
		switch {
		case i == 48:
			if scores[i] != scores[47] || anomalous[i] != anomalous[47] || !anomalous[i] {
				t.Errorf("the duplicate row 48 scored %v/%v, row 47 %v/%v", scores[i], anomalous[i], scores[47], anomalous[47])
			}
		case slices.Contains(notFed, i):
			if scores[i] != 0 || anomalous[i] {
				t.Errorf("row %d (minute %d) not judged scored %v/%v, want 0", i, ts[i]/minute, scores[i], anomalous[i])
			}
		default:
			_, fired := slices.BinarySearch(want.Fired, ts[i])
			if scores[i] != want.Scores[k] || anomalous[i] != fired {
				t.Errorf("row %d scored %v/%v, %v/%v without the rows not judged", i, scores[i], anomalous[i], want.Scores[k], fired)
			}
			k++
		}
	}
	if n, first := RowsBehind(ts); n != 6 || first != 40 {
		t.Errorf("RowsBehind: %d from row %d, want 6 from row 40", n, first)
	}
}
