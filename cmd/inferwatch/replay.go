package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// The offline commands (detect, backtest) judge a file as the daemon judges
// a series: one anomaly rule, made from the flags as a configuration would
// give it, replayed once by rules.Replay with the file's whole span as its
// backfill — `inferwatch run --once --backfill` — over a store in memory
// that holds the file's samples, its observations run through the alert
// lifecycle (for, keep_firing_for). A row is a detection where a finding
// fired.

// replayRule is the anomaly rule the offline commands evaluate.
type replayRule struct {
	detector      string
	params        map[string]string
	lookback      time.Duration // 0: the detector's own history
	step          time.Duration // 0: the file's most common interval
	forDur        time.Duration
	keepFiringFor time.Duration
	minDev        float64
}

// group is the configuration the rule makes for a series whose step is
// step.
func (r replayRule) group(step time.Duration) rulefmt.Group {
	rule := rulefmt.Rule{
		Name: "offline", Kind: rulefmt.KindAnomaly, Spec: &rulefmt.Detector{Name: r.detector, Params: r.params},
		Expr: "series", Lookback: r.lookback, Step: step,
		For: r.forDur, KeepFiringFor: r.keepFiringFor, RepeatInterval: rulefmt.DefaultRepeatInterval, MinDev: r.minDev,
	}
	return rulefmt.Group{Name: "offline", Interval: step, Rules: []rulefmt.Rule{rule}}
}

// replayed is what the daemon's evaluation made of a series.
type replayed struct {
	// step is the rule's step.
	step time.Duration
	// scores are the detector's scores of the samples, in order (0 where
	// it was not ready), and fired the times at which findings fired.
	scores   []float64
	fired    []int64
	findings []alerting.Finding
	// notes are what the evaluation reported for a person (the
	// detector's limits at this step).
	notes []string
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

// replay evaluates the rule over the samples (t strictly increasing) as the
// daemon does with `run --once --backfill` reaching back to the first.
func replay(ctx context.Context, r replayRule, t []int64, v []float64) (replayed, error) {
	step := r.step
	if step <= 0 {
		step = commonStep(t)
	}
	out := replayed{step: step, scores: make([]float64, len(t))}
	if len(t) == 0 {
		return out, nil
	}
	// The evaluation's end, on the step, reaches the last sample; its
	// backfill reaches the first.
	end := time.UnixMilli(t[len(t)-1]).Add(step)
	store := rules.NewMemoryStore()
	if err := store.Add("series", ingest.Labels{{Name: "__name__", Value: "series"}}, t, v); err != nil {
		return out, err
	}
	var scores []alerting.Scores
	err := rules.Replay(ctx, rules.ReplayOptions{Groups: []rulefmt.Group{r.group(step)}, Querier: store, From: end, To: end,
		Backfill: end.Sub(time.UnixMilli(t[0])) + step, Scores: rules.ScoresEvery, Logger: slog.New(noteLog{&out.notes})},
		func(b alerting.Batch) error {
			out.findings = append(out.findings, b.Findings...)
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
				out.scores[i] = sc
			}
		}
	}
	for _, f := range out.findings {
		out.fired = append(out.fired, f.WindowEnd.UnixMilli())
	}
	slices.Sort(out.fired)
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

// rowsJudged maps what a replay made of the rows that advance in time back
// to every row of a file, in file order: a row whose timestamp repeats the
// previous row's takes that row's score and decision; a row behind the
// newest time before it scores 0 and is no detection (the daemon never
// judges a sample out of order). fed are the rows that advance, whose
// times the replay judged.
func rowsJudged(ts []int64, fed []int, rep replayed) (scores []float64, anomalous []bool) {
	scores = make([]float64, len(ts))
	anomalous = make([]bool, len(ts))
	k := 0
	for i := range ts {
		switch {
		case k < len(fed) && fed[k] == i:
			scores[i] = rep.scores[k]
			_, anomalous[i] = slices.BinarySearch(rep.fired, ts[i])
			k++
		case i > 0 && ts[i] == ts[i-1]:
			scores[i], anomalous[i] = scores[i-1], anomalous[i-1]
		}
	}
	return scores, anomalous
}

// advancing returns the rows whose timestamp is after every one before
// them, and their samples.
func advancing(ts []int64, vs []float64) (rows []int, t []int64, v []float64) {
	for i, x := range ts {
		if i == 0 || x > t[len(t)-1] {
			rows, t, v = append(rows, i), append(t, x), append(v, vs[i])
		}
	}
	return rows, t, v
}
