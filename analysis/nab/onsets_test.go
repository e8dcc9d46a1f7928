package nab

import (
	"math"
	"slices"
	"testing"
)

func TestOnsets(t *testing.T) {
	got := Onsets([]float64{0, 2, 2, 0, 2, math.NaN(), 1}, 1)
	if want := []bool{false, true, false, false, true, false, true}; !slices.Equal(got, want) {
		t.Errorf("onsets %v, want %v", got, want)
	}
}

// TestOnsetThreshold: 100 rows, one window on rows 80–90. Scores of 2
// inside the window alone: every threshold from the lowest, 1.05^−28, to
// 2 finds it once and scores alike, so the lowest wins. A score of 3 on
// row 50 as well: thresholds to 2 find it too, a false positive; those
// in (2, 3] find only it, and none the window; detecting nothing is
// worse than the first (a true positive outweighs a false one), so the
// lowest wins again. A score of 3 on row 50 alone: nothing scores best.
func TestOnsetThreshold(t *testing.T) {
	f, err := NewFile("a.csv", 100, []Window{{80, 90}})
	if err != nil {
		t.Fatal(err)
	}
	scores := func(rows map[int]float64) []Scores {
		s := make([]float64, 100)
		for i, v := range rows {
			s[i] = v
		}
		return []Scores{{File: f, Scores: s}}
	}
	window := map[int]float64{}
	for i := 80; i <= 90; i++ {
		window[i] = 2
	}
	lowest := math.Pow(1.05, -28)
	th, ok, err := OnsetThreshold(Standard, scores(window))
	if err != nil || !ok || th != lowest {
		t.Errorf("the window alone: %g, %t, %v; want %g", th, ok, err, lowest)
	}
	window[50] = 3
	th, ok, err = OnsetThreshold(Standard, scores(window))
	if err != nil || !ok || th != lowest {
		t.Errorf("the window and a false positive: %g, %t, %v; want %g", th, ok, err, lowest)
	}
	th, ok, err = OnsetThreshold(Standard, scores(map[int]float64{50: 3}))
	if err != nil || ok {
		t.Errorf("a false positive alone: %g, %t, %v; want nothing detected", th, ok, err)
	}
}
