package rules

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// The offline commands (detect, backtest nab) judge a file as the daemon
// judges a series: one anomaly rule, made as a configuration would give
// it, replayed once by Replay with the file's whole span as its backfill
// — `inferwatch run --once --backfill` — over a store in memory that holds
// the file's samples, its observations run through the alert lifecycle
// (for, keep_firing_for). A row is a detection where a finding fired.

// SeriesRule is an anomaly rule replayed over one series (ReplaySeries).
type SeriesRule struct {
	Detector      string
	Params        map[string]string
	Lookback      time.Duration // 0: the detector's own history
	Step          time.Duration // 0: the series' most common interval
	For           time.Duration
	KeepFiringFor time.Duration
	MinDev        float64
}

// group is the configuration the rule makes for a series whose step is
// step.
func (r SeriesRule) group(step time.Duration) rulefmt.Group {
	rule := rulefmt.Rule{
		Name: "offline", Kind: rulefmt.KindAnomaly, Spec: &rulefmt.Detector{Name: r.Detector, Params: r.Params},
		Expr: "series", Lookback: r.Lookback, Step: step,
		For: r.For, KeepFiringFor: r.KeepFiringFor, RepeatInterval: rulefmt.DefaultRepeatInterval, MinDev: r.MinDev,
	}
	return rulefmt.Group{Name: "offline", Interval: step, Rules: []rulefmt.Rule{rule}}
}

// SeriesReplay is what the daemon's evaluation made of a series.
type SeriesReplay struct {
	// Step is the rule's step.
	Step time.Duration
	// Scores are the detector's scores of the samples, in order (0 where
	// it was not ready), and Fired the times at which findings fired.
	Scores   []float64
	Fired    []int64
	Findings []alerting.Finding
	// Notes are what the evaluation reported for a person (the
	// detector's limits at this step).
	Notes []string
}

// noteLog keeps the messages the manager logs at warning level (the
// rule's notes).
type noteLog struct{ notes *[]string }

func (h noteLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h noteLog) Handle(_ context.Context, r slog.Record) error {
	*h.notes = append(*h.notes, r.Message)
	return nil
}
func (h noteLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h noteLog) WithGroup(string) slog.Handler      { return h }

// ReplaySeries evaluates the rule over the samples (t strictly increasing) as the
// daemon does with `run --once --backfill` reaching back to the first.
func ReplaySeries(ctx context.Context, r SeriesRule, t []int64, v []float64) (SeriesReplay, error) {
	step := r.Step
	if step <= 0 {
		step = commonStep(t)
	}
	out := SeriesReplay{Step: step, Scores: make([]float64, len(t))}
	if len(t) == 0 {
		return out, nil
	}
	// The evaluation's end, on the step, reaches the last sample; its
	// backfill reaches the first.
	end := time.UnixMilli(t[len(t)-1]).Add(step)
	store := NewMemoryStore()
	if err := store.Add("series", ingest.Labels{{Name: "__name__", Value: "series"}}, t, v); err != nil {
		return out, err
	}
	var scores []alerting.Scores
	err := Replay(ctx, ReplayOptions{Groups: []rulefmt.Group{r.group(step)}, Querier: store, From: end, To: end,
		Backfill: end.Sub(time.UnixMilli(t[0])) + step, Scores: ScoresEvery, Logger: slog.New(noteLog{&out.Notes})},
		func(b alerting.Batch) error {
			out.Findings = append(out.Findings, b.Findings...)
			scores = append(scores, b.Scores...)
			return nil
		})
	if err != nil {
		return out, err
	}
	for _, s := range scores {
		for k, at := range s.T {
			i, ok := slices.BinarySearch(t, at)
			if !ok {
				return out, fmt.Errorf("internal error: a score at %d, which is no sample's time", at)
			}
			if sc := s.Score[k]; !math.IsNaN(sc) {
				out.Scores[i] = sc
			}
		}
	}
	for _, f := range out.Findings {
		out.Fired = append(out.Fired, f.WindowEnd.UnixMilli())
	}
	slices.Sort(out.Fired)
	return out, nil
}

// commonStep is the most common interval between consecutive samples (the
// shortest of equally common ones), rounded to a second and at least one:
// the step a store would be queried at for the series. One sample: a
// minute.
func commonStep(t []int64) time.Duration {
	best := ingest.CommonSpacing(t, 1)
	if best == 0 {
		return time.Minute
	}
	return max(time.Second, (time.Duration(best) * time.Millisecond).Round(time.Second))
}

// JudgeRows maps what a replay made of the rows that advance in time back
// to every row of a file, in file order: a row whose timestamp repeats the
// previous row's takes that row's score and decision; a row behind the
// newest time before it scores 0 and is no detection (the daemon never
// judges a sample out of order). fed are the rows that advance, whose
// times the replay judged.
func JudgeRows(ts []int64, fed []int, rep SeriesReplay) (scores []float64, anomalous []bool) {
	scores = make([]float64, len(ts))
	anomalous = make([]bool, len(ts))
	k := 0
	for i := range ts {
		switch {
		case k < len(fed) && fed[k] == i:
			scores[i] = rep.Scores[k]
			_, anomalous[i] = slices.BinarySearch(rep.Fired, ts[i])
			k++
		case i > 0 && ts[i] == ts[i-1]:
			scores[i], anomalous[i] = scores[i-1], anomalous[i-1]
		}
	}
	return scores, anomalous
}

// Advancing returns the rows whose timestamp is after every one before
// them, and their samples.
func Advancing(ts []int64, vs []float64) (rows []int, t []int64, v []float64) {
	for i, x := range ts {
		if i == 0 || x > t[len(t)-1] {
			rows, t, v = append(rows, i), append(t, x), append(v, vs[i])
		}
	}
	return rows, t, v
}

// RowsBehind counts the rows that a replay never judges because they step
// back in time (not the duplicates of the row before them), and returns
// the index of the first, or -1.
func RowsBehind(ts []int64) (n, first int) {
	first = -1
	var newest int64
	for i, t := range ts {
		switch {
		case i == 0 || t > newest:
			newest = t
		case t != ts[i-1]:
			if n++; first < 0 {
				first = i
			}
		}
	}
	return n, first
}
