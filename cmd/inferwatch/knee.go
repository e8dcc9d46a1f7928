package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/analysis"
	"github.com/inferwatch/inferwatch/ingest"
)

const kneeHelp = `Usage: inferwatch knee --input FILE [flags]

Finds the knee of a replica's throughput curve: the concurrency (requests in
flight) beyond which more concurrency stops buying throughput. Past the knee
requests only queue, and latency grows.

FILE is a CSV of concurrency,qps rows, one measured pair per row (in any
order, repeated concurrencies allowed), with an optional header row; extra
columns are ignored. At least 5 rows are needed.

Output, one JSON object:
  knee_concurrency      the concurrency at the knee
  knee_qps              the throughput there (kneedle: the binned, smoothed
                        curve's value; cubic: the fitted cubic's value)
  method                kneedle or cubic
  strength              kneedle only (null for cubic): how far the knee lies above the chord
                        of the curve scaled to the unit square, in (0, 1);
                        0.3 or more is a sharp saturation, near 0 a nearly
                        straight curve whose knee is weak evidence
  inside                false when the cubic's inflection lies outside the
                        measured concurrencies (the cubic extrapolated)
  n                     the rows read
  concurrency_min,
  concurrency_max       the range of measured concurrencies

Methods: kneedle (default) scales the curve to the unit square and takes the
measured point farthest above the straight line from its first to its last
point, after binning concurrency into --bins bins and smoothing QPS over
--smooth points. cubic fits qps = a·x³ + b·x² + c·x + d (x: concurrency) by least squares and
returns its inflection point, where the curve turns from convex to concave.

Exit status: 0 ok, 1 bad input or no knee (the message names the file and
line), 2 usage error.

Flags:
`

// kneeMinPoints is the least number of rows knee accepts: fewer cannot
// show where a curve bends.
const kneeMinPoints = 5

func cmdKnee(args []string, stdout, stderr io.Writer) int {
	var (
		file, method string
		bins, smooth int
	)
	fs := newOfflineFlagSet("inferwatch knee", kneeHelp)
	fs.StringVar(&file, "input", "", "`FILE`: CSV of concurrency,qps rows")
	fs.StringVar(&method, "method", string(analysis.KneeKneedle), "knee method: kneedle or cubic")
	fs.IntVar(&bins, "bins", analysis.DefaultKneeBins, "kneedle: group the concurrencies into this many equal-width bins when there are more distinct ones (-1: no binning)")
	fs.IntVar(&smooth, "smooth", analysis.DefaultKneeSmooth, "kneedle: width in points of the moving average applied to QPS (1: none)")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	m := analysis.KneeMethod(method)
	switch {
	case file == "":
		return usageError(stderr, fs, "--input FILE is required")
	case m != analysis.KneeKneedle && m != analysis.KneeCubic:
		return usageError(stderr, fs, fmt.Sprintf("--method %q is not one of kneedle, cubic", method))
	case bins == 0 || bins < -1:
		return usageError(stderr, fs, fmt.Sprintf("--bins must be ≥ 1, or -1 for no binning, got %d", bins))
	case smooth < 1:
		return usageError(stderr, fs, fmt.Sprintf("--smooth must be ≥ 1 (1: no smoothing), got %d", smooth))
	}
	res, err := knee(file, analysis.KneeConfig{Method: m, Bins: bins, Smooth: smooth})
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch knee:", err)
		return 1
	}
	return writeJSON(stdout, stderr, res)
}

type kneeResult struct {
	KneeConcurrency float64            `json:"knee_concurrency"`
	KneeQPS         float64            `json:"knee_qps"`
	Method          string             `json:"method"`
	Strength        alerting.JSONFloat `json:"strength"`
	Inside          bool               `json:"inside"`
	N               int                `json:"n"`
	ConcurrencyMin  float64            `json:"concurrency_min"`
	ConcurrencyMax  float64            `json:"concurrency_max"`
	File            string             `json:"file"`
}

func knee(file string, cfg analysis.KneeConfig) (kneeResult, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return kneeResult{}, fmt.Errorf("reading the knee curve: %w", err)
	}
	conc, qps, err := ingest.ParseKneeCurve(data, file, kneeMinPoints)
	if err != nil {
		return kneeResult{}, err
	}
	k, err := analysis.FindKnee(conc, qps, cfg)
	if err != nil {
		if errors.Is(err, analysis.ErrNoKnee) {
			return kneeResult{}, fmt.Errorf("%s: the curve of %d points has no knee (it does not flatten the way a saturated replica does; measure at higher concurrency, or try --method cubic / --smooth 1): %w", file, len(conc), err)
		}
		return kneeResult{}, fmt.Errorf("%s: %w", file, err)
	}
	res := kneeResult{
		KneeConcurrency: k.Concurrency,
		KneeQPS:         k.QPS,
		Method:          string(k.Method),
		Strength:        alerting.JSONFloat(k.Strength),
		Inside:          k.Inside,
		N:               len(conc),
		ConcurrencyMin:  conc[0],
		ConcurrencyMax:  conc[0],
		File:            file,
	}
	if k.Method != analysis.KneeKneedle {
		res.Strength = alerting.JSONFloat(math.NaN()) // Kneedle's measure only
	}
	for _, c := range conc {
		res.ConcurrencyMin = min(res.ConcurrencyMin, c)
		res.ConcurrencyMax = max(res.ConcurrencyMax, c)
	}
	return res, nil
}
