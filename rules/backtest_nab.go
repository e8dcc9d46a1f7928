package rules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/inferwatch/inferwatch/analysis/nab"
	"github.com/inferwatch/inferwatch/ingest"
)

// NABRun is one file of a NAB corpus after the rule judged it (ReplayNAB).
type NABRun struct {
	nab.Run
	Key string // CATEGORY/FILE.csv, as in the windows file
	// Step is the rule's step, Fired the times findings fired at.
	Step  time.Duration
	Fired []int64
	// Behind counts the rows that step back in time (see RowsBehind), the
	// first on line BehindLine.
	Behind, BehindLine int
}

// ReplayNAB replays the rule over every file dir/KEY of a NAB corpus (keys:
// CATEGORY/FILE.csv, each with its windows), on as many workers as there
// are CPUs, calling done (when not nil, one call at a time) after each
// file, and returns the runs in the order of keys.
func ReplayNAB(ctx context.Context, dir string, keys []string, windows map[string][][2]int64, rule SeriesRule, done func()) ([]NABRun, error) {
	runs := make([]NABRun, len(keys))
	errs := make([]error, len(keys))
	next := make(chan int)
	var wg sync.WaitGroup
	var doneMu sync.Mutex
	for range min(runtime.GOMAXPROCS(0), len(keys)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				runs[i], errs[i] = replayNABFile(ctx, dir, keys[i], windows[keys[i]], rule)
				if done != nil {
					doneMu.Lock()
					done()
					doneMu.Unlock()
				}
			}
		}()
	}
feed:
	for i := range keys {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("interrupted: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return runs, nil
}

// replayNABFile reads one file, keeping every row in file order as NAB does
// (rows that repeat a timestamp or step back in time included), and
// evaluates the rule over it as the daemon would (see ReplaySeries).
//
// NAB reads a data file as it is written, without sorting it (nab/corpus.py
// DataFile: pandas.read_csv), hands its detectors every row in that order
// (nab/detectors/base.py AnomalyDetector.run iterates the rows), and scores
// the detector's per-row scores against the rows' places in the file, the
// timestamps serving only to find where each window starts and ends
// (nab/scorer.py scoreDataSet calls nab/sweeper.py Sweeper.scoreDataSet;
// see nab.WindowRows). The scoring here is the same. The feeding cannot
// be: the daemon judges a series forward in time, so the rows behind the
// newest time are not judged (see JudgeRows).
func replayNABFile(ctx context.Context, dir, key string, limits [][2]int64, rule SeriesRule) (NABRun, error) {
	path := filepath.Join(dir, filepath.FromSlash(key))
	data, err := os.ReadFile(path)
	if err != nil {
		return NABRun{}, err
	}
	c, err := ingest.ReadCSV(bytes.NewReader(data), path, ingest.CSVOptions{AllowDuplicates: true, AllowUnsorted: true})
	if err != nil {
		return NABRun{}, err
	}
	ts := c.Series.Timestamps
	ws, err := nab.WindowRows(ts, limits)
	if err != nil {
		return NABRun{}, fmt.Errorf("%s: %w", path, err)
	}
	f, err := nab.NewFile(key, len(ts), ws)
	if err != nil {
		return NABRun{}, err
	}
	rows, t, v := Advancing(ts, c.Series.Values)
	rep, err := ReplaySeries(ctx, rule, t, v)
	if err != nil {
		return NABRun{}, fmt.Errorf("%s: %w", path, err)
	}
	scores, anomalous := JudgeRows(ts, rows, rep)
	category, _, _ := strings.Cut(key, "/")
	run := NABRun{Run: nab.Run{File: f, Category: category, Scores: scores, Anomalous: anomalous}, Key: key, Step: rep.Step, Fired: rep.Fired}
	if len(t) > 1 {
		run.Days = float64(t[len(t)-1]-t[0]) / 86_400_000
	}
	if n, first := RowsBehind(ts); n > 0 {
		run.Behind, run.BehindLine = n, c.Lines[first]
	}
	return run, nil
}

// NABReport is the result of a NAB backtest (backtest nab --json).
type NABReport struct {
	// Detector, Params and Window describe the rule replayed.
	Detector string            `json:"detector"`
	Params   map[string]string `json:"params"`
	Window   string            `json:"window"`
	Files    int               `json:"files"`
	Rows     int               `json:"rows"`
	Windows  int               `json:"windows"`
	// Behind counts the rows that step back in time, scored in file order
	// but not fed to the detector.
	Behind int `json:"rows_stepping_back"`
	// Seconds is how long the backtest took.
	Seconds  float64             `json:"seconds"`
	Profiles []nab.ProfileScores `json:"profiles"`
}

// ScoreNAB scores the runs of ReplayNAB under each profile and counts the
// corpus: files, rows, scored windows and rows stepping back. The rule's
// description and the time taken are the caller's to fill in.
func ScoreNAB(runs []NABRun, profiles []nab.Profile) (*NABReport, error) {
	rep := &NABReport{Files: len(runs)}
	scored := make([]nab.Run, len(runs))
	for i, r := range runs {
		rep.Rows += r.File.Rows()
		rep.Windows += r.File.ScoredWindows()
		rep.Behind += r.Behind
		scored[i] = r.Run
	}
	for _, p := range profiles {
		pr, err := nab.ScoreProfile(p, scored)
		if err != nil {
			return nil, err
		}
		rep.Profiles = append(rep.Profiles, pr)
	}
	return rep, nil
}
