package nab

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// ParseWindows reads NAB's combined_windows.json, named name in errors:
// for each CATEGORY/FILE.csv, its windows as [start, end] times
// ("2014-04-10 07:15:00.000000", UTC) in unix ms, sorted by start.
func ParseWindows(data []byte, name string) (map[string][][2]int64, error) {
	var raw map[string][][]string
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: not NAB's windows file (want {\"category/file.csv\": [[\"start\", \"end\"], ...]}): %w", name, err)
	}
	out := make(map[string][][2]int64, len(raw))
	for key, ws := range raw {
		out[key] = make([][2]int64, 0, len(ws))
		for k, w := range ws {
			if len(w) != 2 {
				return nil, fmt.Errorf("%s: %s: window %d has %d times, want [start, end]", name, key, k+1, len(w))
			}
			var l [2]int64
			for i, s := range w {
				tm, err := time.Parse("2006-01-02 15:04:05.999999", s)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: window %d: time %q is not YYYY-MM-DD hh:mm:ss[.ffffff]", name, key, k+1, s)
				}
				l[i] = tm.UnixMilli()
			}
			if l[1] < l[0] {
				return nil, fmt.Errorf("%s: %s: window %d ends (%s) before it starts (%s)", name, key, k+1, w[1], w[0])
			}
			out[key] = append(out[key], l)
		}
		slices.SortFunc(out[key], func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	}
	return out, nil
}

// Run is one file of a corpus after a detector judged it: its scores and
// detections per row, its category, and its span in days.
type Run struct {
	File      *File
	Category  string
	Scores    []float64
	Anomalous []bool
	Days      float64
}

// ProfileScores are a profile's scores of a corpus, per category and
// overall.
type ProfileScores struct {
	Name    string  `json:"name"`
	Weights Weights `json:"weights"`
	// Own is the score at the runs' own detections (Run.Anomalous).
	Own Table `json:"own"`
	// Best is the score at the threshold on the detector's scores (among
	// 1.05^k) that maximises the overall raw score, each run of rows at
	// or above it counting once (null: detecting nothing is best).
	BestThreshold any   `json:"best_threshold"`
	Best          Table `json:"best"`
}

// Weights are a profile's A_TP, A_FP and A_FN.
type Weights struct {
	TP float64 `json:"tp"`
	FP float64 `json:"fp"`
	FN float64 `json:"fn"`
}

// Table is the score of each category and of all of them.
type Table struct {
	Categories []Line `json:"categories"`
	Overall    Line   `json:"overall"`
}

// Line is the score of a set of files. Score is NAB's normalised score
// (null when the files have no window); Raw the sum of the files' scores.
type Line struct {
	Category string   `json:"category,omitempty"`
	Files    int      `json:"files"`
	Windows  int      `json:"windows"`
	Score    *float64 `json:"score"`
	Raw      float64  `json:"raw"`
	TP       int      `json:"tp"`
	FP       int      `json:"fp"`
	FN       int      `json:"fn"`
	// SeriesDays is the files' span in days, summed; FPPerSeriesDay the
	// false positives per day of one series.
	SeriesDays     float64 `json:"series_days"`
	FPPerSeriesDay float64 `json:"false_positives_per_series_day"`
}

// ScoreProfile scores the runs with p: at their own detections, and at
// the threshold on their scores that OnsetThreshold finds best.
func ScoreProfile(p Profile, runs []Run) (ProfileScores, error) {
	out := ProfileScores{Name: p.Name, Weights: Weights{p.TP, p.FP, p.FN}}
	own, err := ScoreTable(p, runs, func(r Run) []bool { return r.Anomalous })
	if err != nil {
		return out, err
	}
	out.Own = own
	files := make([]Scores, len(runs))
	for i, r := range runs {
		files[i] = Scores{File: r.File, Scores: r.Scores}
	}
	th, ok, err := OnsetThreshold(p, files)
	if err != nil {
		return out, err
	}
	if ok {
		out.BestThreshold = th
	} else {
		th = math.Inf(1)
	}
	out.Best, err = ScoreTable(p, runs, func(r Run) []bool { return Onsets(r.Scores, th) })
	if err != nil {
		return out, err
	}
	return out, nil
}

// ScoreTable scores each run's detections and sums them per category
// and overall.
func ScoreTable(p Profile, runs []Run, detections func(Run) []bool) (Table, error) {
	var out Table
	var all Result
	var cur Result
	files := 0
	var days, allDays float64
	flush := func(category string) {
		out.Categories = append(out.Categories, makeLine(p, category, files, days, cur))
		all.Add(cur)
		allDays += days
		cur, files, days = Result{}, 0, 0
	}
	for i, r := range runs {
		res, err := r.File.Score(p, detections(r))
		if err != nil {
			return out, err
		}
		cur.Add(res)
		files++
		days += r.Days
		if i == len(runs)-1 || runs[i+1].Category != r.Category {
			flush(r.Category)
		}
	}
	out.Overall = makeLine(p, "", len(runs), allDays, all)
	return out, nil
}

// makeLine is the line of files whose results add up to r.
func makeLine(p Profile, category string, files int, days float64, r Result) Line {
	l := Line{Category: category, Files: files, Windows: r.Windows, Raw: r.Score, TP: r.TP, FP: r.FP, FN: r.FN, SeriesDays: days}
	if s := r.Normalized(p); !math.IsNaN(s) {
		l.Score = &s
	}
	if days > 0 {
		l.FPPerSeriesDay = float64(r.FP) / days
	}
	return l
}
