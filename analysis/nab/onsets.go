package nab

import "math"

// Onsets marks the first row of each run of rows scoring th or more (a
// NaN score is below every threshold): a rule that took th as its
// threshold would find each such run once, as the alert lifecycle finds
// each anomalous stretch once.
func Onsets(scores []float64, th float64) []bool {
	det := make([]bool, len(scores))
	for i, s := range scores {
		det[i] = s >= th && (i == 0 || !(scores[i-1] >= th))
	}
	return det
}

// OnsetThreshold returns the threshold, among 1.05^k (k from −28, 0.25,
// to the highest finite score; 1 included), at which the onsets of the
// runs of rows at or above it (Onsets) score best over all files under
// p, the lowest of equals; and false when detecting nothing scores at
// least as well. Unlike Sweep, which counts every row at or above the
// threshold, it judges a threshold as a rule with it would detect.
func OnsetThreshold(p Profile, files []Scores) (float64, bool, error) {
	top := 0.0
	for _, f := range files {
		for _, s := range f.Scores {
			if !math.IsInf(s, 0) {
				top = max(top, s)
			}
		}
	}
	best, bestTh, found := 0.0, 0.0, false
	for k := -28; ; k++ {
		th := math.Pow(1.05, float64(k))
		if th > top && k > 0 {
			break
		}
		var total float64
		for _, f := range files {
			res, err := f.File.Score(p, Onsets(f.Scores, th))
			if err != nil {
				return 0, false, err
			}
			total += res.Score
		}
		if !found || total > best {
			best, bestTh, found = total, th, true
		}
	}
	var none float64
	for _, f := range files {
		res, err := f.File.Score(p, make([]bool, len(f.Scores)))
		if err != nil {
			return 0, false, err
		}
		none += res.Score
	}
	if !found || none >= best {
		return 0, false, nil
	}
	return bestTh, true, nil
}
