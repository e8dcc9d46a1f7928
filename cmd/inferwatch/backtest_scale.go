package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/forecasting"
	"github.com/inferwatch/inferwatch/forecasting/capacity"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
	pmodel "github.com/prometheus/common/model"
)

const backtestScaleUsage = `Usage: inferwatch backtest scale (--input FILE | --sum-of GLOB | --arrivals FILE | --gentd26 FILE | --servegen-clients GLOB) (--capacity REQS_PER_REPLICA | --peak-replicas N) [--frontier] [flags]

Replays a traffic series through the scale signal and, beside it, through a
reactive autoscaler, and reports for each how the replicas it asked for
carried the traffic.

The series is requests per second (with --counts: requests per step) on an
even step: a CSV timestamp,value file or any file inferwatch forecast reads
(--input), the sum of the client series of the files matching GLOB
(--sum-of, forecast bottom-up as a forecast rule with sum_by does), a log
of requests (--arrivals, below), or GenTD26's qps.csv (--gentd26, below).
A file whose samples are uneven or repeat a time is read with --resample
STEP: the mean of the samples in each STEP (aligned on multiples of it since
the epoch; with --counts their sum). A sample at t is the load over
[t, t+step); it is known at t+step.

At each step, from the samples known then:
  forecast  the forecast rule and the scale rule with their defaults (or the
            flags below): the series' forecaster (forecasting.Forecaster, or
            forecasting.Sum with --sum-of), fitted on the warm-up as a
            forecast rule's first evaluation fits and then fed one sample a
            step, and forecasting.Decide on the peak of its upper bound over
            --horizon (or what the highest load of the last --hold needs,
            if more), with the rule's hysteresis band, stable intervals and
            cooldown. The horizon defaults to the scale rule's: a step
            plus the start-up, until the replicas the next decision asks
            for serve, in whole steps and at most the forecast rule's 10m
            (the forecast reaching 10m);
  reactive  a HorizontalPodAutoscaler on the request rate: ⌈the load of the
            last step / (--hpa-target × capacity)⌉, at once on a rise, on a
            fall the highest of its recommendations over the last
            --hpa-window.
Replicas asked for are paid for at once and serve --startup later;
replicas let go stop at once. Both start the first decision with the
replicas the last warm-up step needed, all serving; the scale rule starts
afresh, as a daemon started then. A third row,
foresight, knows the load: at each step it asks for what the peak until
the next decision's replicas serve needs, so no minute is short; its
replica-minutes are the least a decision a step can pay for that.

--what-if-errors F[,F…] asks how much a better forecast would buy: for
each level and each F in [0, 1], a what-if row replays the scale rule, as
the forecast row does, on the forecast with every error scaled by F: at
each lead the mean and both bounds are moved toward the load that came,
to F of their distance from it (so the interval is F times as wide). F 0
is a perfect forecast decided on by the rule's own policy (its hold,
hysteresis and horizon), F 1 the forecast row again. Like foresight, a
what-if row reads the load to come: it is a bound, not a policy.

For each policy: replica-minutes (replicas asked for × minutes), the minutes
under-provisioned (the load above the serving replicas × capacity), the
worst shortfall (req/s) and the number of scale changes, over the steps
after the warm-up. With --json, the same as JSON.

--level, --hpa-target and --hpa-window take comma-separated lists: each
level is a forecast policy and each pair of a target and a window a
reactive one, replayed side by side (the first of each is the one the
ratio compares). The report then sets
each policy against the other at the other's figures: the forecast level
short the fewest minutes within the first target's replica-minutes, and
the target short the fewest minutes within the first level's
replica-minutes, and the target paying the least while short no more
minutes than the first level; where none does, the cheapest level and the
least short target.

--arrivals FILE reads a log of requests, one a row (Azure's LLM inference
traces, BurstGPT, Mooncake, a gateway's access log): CSV with a header
(or none, the time first), or JSON lines, an object a request, in any
order, gzipped or not. The time
is the column or field --time-field names, or else the first of
timestamp, time, ts, @timestamp, arrival_time and start_time there (any
case), or else, in CSV, the first column. The load of each
--step (default 1m) from the first request's is the requests that arrived
in it, per second; the last step, cut off at the last request, is left
out. Times are read as --input reads them (unix seconds, integer unix
milliseconds from 1e11, or YYYY-MM-DD[T ]hh:mm:ss[.fff], in UTC unless
it ends in Z or ±hh:mm), or as numbers in --time-unit s or ms.

--gentd26 FILE reads GenTD26's qps.csv (timestamp_anon,value,container_ip,
request_type: one row per container and sample time, sampled every 57 s,
rows of zero left out) as the per-minute request rate of --request-type:
at each sample time of the file's grid the containers' values are added
(0 where none has a row of that type), each holds until the next sample
time, and each whole minute of the file takes the time-weighted mean.
--gentd26-queue FILE reads GenTD26's queue_size_raw_anon.csv the same way,
as the requests waiting each minute, which the scale rule takes as its
scale.waiting query: past --waiting-per-replica (5) a replica, it asks
for ⌈waiting / that⌉ replicas, at least one more, whatever the forecast.
--write-series FILE writes the series replayed as CSV timestamp,value
(unix seconds, requests per second), to read back with --input.
--write-decisions FILE writes each decision as CSV: its time (unix
seconds), the load of the step that starts then, what the first forecast
level's scale signal asked for (desired_replicas, predicted_load,
predicted_upper, tier and reason, as a scale rule publishes them), and
the replicas the first reactive policy and foresight asked for; then,
when --level, --hpa-target or --hpa-window list several, the same for
each other level (desired_replicas_level_0.5, …, reason_level_0.5) and
the replicas of each other reactive policy
(reactive_replicas_target_0.8_window_5m); and with --what-if-errors,
each what-if row's signal (desired_replicas_what_if_level_0.9_errors_0.5,
…).

--servegen-clients GLOB reads ServeGen's client traces (one row per
10-minute window: t_seconds,rate_req_per_s,cv,pattern,p1,p2, the window's
arrival process) and draws each client's requests from them: in each
window a renewal process in its steady state whose times between requests
have the window's mean 1/rate, Gamma with shape 1/cv² or Weibull with the
fitted shape p1; the requests of all clients are counted per --step
(default 1m). --seed seeds the draws; the same seed draws the same
requests.

--frontier sets the scale signal against Kubernetes' HPA at equal cost.
For each of --startups (1m,3m,5m,10m) it replays the HPA as its
controller runs (a sync every 15s on the mean load of the last minute, a
10% tolerance, at most double or four more replicas a sync, a 5m
scale-down stabilisation) at each --hpa-target (0.4 to 1 by 0.05 unless
listed), draws its frontier of replica-minutes against under-provisioned
minutes, and replays the scale rule at each --level and
--scale-down-margin (a list here), on --model and on each --ablation model
(naive and seasonal_naive: what a naive forecast gains is the policy's,
the rest the forecaster's). For each signal it reports the HPA frontier's
under-provisioned minutes at the signal's replica-minutes (linear between
the two targets around it) and the ratio of the signal's to it, with a
90% interval from --bootstrap resamples of whole days; then, for each
signal, the start-up above which it is short less often than the HPA that
costs the same. The load's step is the decision step: a minute or less.

`

func cmdBacktestScale(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newOfflineFlagSet("inferwatch backtest scale", backtestScaleUsage)
	input := fs.String("input", "", "the traffic series")
	sumOf := fs.String("sum-of", "", "the traffic is the sum of the series in the files matching this glob, forecast bottom-up")
	gentd := fs.String("gentd26", "", "GenTD26's qps.csv, read as a per-minute request rate (see above)")
	arrivals := fs.String("arrivals", "", "a log of requests, one a row, read as the request rate per --step (see above)")
	timeUnit := fs.String("time-unit", "auto", "with --arrivals: how numeric times read: auto (as --input: unix seconds, or milliseconds from 1e11), s or ms")
	timeField := fs.String("time-field", "", "with --arrivals: the CSV column or JSON field holding each request's time (default: the first of "+strings.Join(ingest.ArrivalTimeFields(), ", ")+", any case)")
	requestType := fs.String("request-type", "Generative Requests", "with --gentd26: the request_type to count, or all")
	gentdQueue := fs.String("gentd26-queue", "", "with --gentd26: GenTD26's queue_size_raw_anon.csv, read per minute as the requests waiting, which the scale rule takes as its scale.waiting query")
	waitingPer := fs.Float64("waiting-per-replica", rulefmt.DefaultScale().WaitingPerReplica, "scale.waiting_per_replica: with --gentd26-queue, the waiting requests a replica above which the scale rule asks for more")
	counts := fs.Bool("counts", false, "the values are requests per step, not per second")
	perReplica := fs.Float64("capacity", 0, "requests per second one replica sustains")
	peakReplicas := fs.Int("peak-replicas", 0, "instead of --capacity: the capacity is the peak load after the warm-up divided by this")
	startupS := fs.String("startup", dur.Format(rulefmt.DefaultScaleStartup), "scale.startup: how long a replica asked for takes to serve")
	stepS := fs.String("step", "", "the decision step, a multiple of the series' step (default the series' step); the series is averaged to it; with --arrivals, the step the requests are counted in (default 1m)")
	warmupS := fs.String("warmup", "", "history before the first decision (default one period, at most a quarter of the series)")
	hpaWindowS := fs.String("hpa-window", "5m", "the reactive policy's scale-down stabilisation window (0s: none); a comma-separated list replays each")
	hpaTargetS := fs.String("hpa-target", "1", "the reactive policy's target: this share of a replica's capacity, in (0, 1]; a comma-separated list replays each")
	resampleS := fs.String("resample", "", "with --input or --sum-of: average the samples in each step of this duration (aligned on multiples of it since the epoch; with --counts, sum them) instead of taking the file's own step: for a file whose samples are uneven or repeat a time")
	whatIfS := fs.String("what-if-errors", "", "also replay each forecast level on its forecast with every error scaled by each of these comma-separated numbers in [0, 1] (0: a perfect forecast; see above)")
	writeSeries := fs.String("write-series", "", "write the series replayed to this CSV file")
	writeDecisions := fs.String("write-decisions", "", "write each decision to this CSV file (see above)")
	asJSON := fs.Bool("json", false, "write the result as JSON")
	servegen := fs.String("servegen-clients", "", "the traffic is requests drawn from the arrival fits of the ServeGen client traces matching this glob, counted per --step (default 1m; see --frontier)")
	seed := fs.Uint64("seed", 1, "with --servegen-clients: the seed of the draws; with --frontier: of the bootstrap")
	frontierOn := fs.Bool("frontier", false, "set the scale signal against Kubernetes' HPA at equal cost, at each --startups (see --frontier above)")
	startupsS := fs.String("startups", "1m,3m,5m,10m", "with --frontier: the start-up delays replayed, ascending")
	ablationS := fs.String("ablation", "naive,seasonal_naive", "with --frontier: the forecast models the scale rule is also replayed on, besides --model (none: no other)")
	plotFile := fs.String("plot", "", "with --frontier: also draw the frontier and the signals as an SVG file")
	bootstrap := fs.Int("bootstrap", 1000, "with --frontier: resamples of whole days for each ratio's 90% interval (0: none)")
	// The forecast and scale rules' keys, with their defaults.
	horizonS := fs.String("horizon", "", "forecast.horizon and scale.horizon: how far ahead the forecast reaches and the decision looks (default the rules': a forecast to 10m, and a decision on the step plus --startup, rounded up to whole steps and at most 10m)")
	model := fs.String("model", rulefmt.DefaultForecastModel, "forecast.model: "+strings.Join(forecasting.Models(), ", "))
	levelS := fs.String("level", strconv.FormatFloat(rulefmt.DefaultScaleLevel, 'g', -1, 64), "scale.level: the coverage of the forecast interval whose upper bound the decision plans with; a comma-separated list replays each")
	forecastLevel := fs.Float64("forecast-level", rulefmt.DefaultForecastLevel, "forecast.level: the prediction interval the forecast rule publishes (the decision plans at --level)")
	periodS := fs.String("period", dur.Format(rulefmt.DefaultForecastPeriod), "forecast.period: the seasonal period")
	def := rulefmt.DefaultScale()
	minReplicas := fs.Int("min-replicas", def.MinReplicas, "scale.min_replicas (both policies)")
	maxReplicas := fs.Int("max-replicas", def.MaxReplicas, "scale.max_replicas (both policies; 0: none)")
	stable := fs.Int("scale-down-stable-intervals", def.ScaleDownStableIntervals, "scale.scale_down_stable_intervals")
	marginS := fs.String("scale-down-margin", strconv.FormatFloat(def.ScaleDownMargin, 'g', -1, 64), "scale.scale_down_margin: the hysteresis band of a step down, a share of the capacity (0: none); with --frontier a comma-separated list replays each")
	cooldownS := fs.String("cooldown", dur.Format(def.Cooldown), "scale.cooldown (0s: none)")
	holdS := fs.String("hold", dur.Format(def.Hold), "scale.hold: the forecast tier asks for at least what the highest load of this last while needs (0s: none)")
	burstQ := fs.Float64("burst-quantile", def.BurstQuantile, "scale.burst_quantile: the forecast tier asks for at least this quantile of the load a horizon ahead, calibrated on the load's own past moves (0: none)")
	burstWindowS := fs.String("burst-window", dur.Format(def.BurstWindow), "scale.burst_window: the load the burst quantile is calibrated on")
	burstMeanS := fs.String("burst-mean", dur.Format(def.BurstMean), "scale.burst_mean: the recent mean the burst quantile guesses from")
	burstPeriodS := fs.String("burst-period", dur.Format(def.BurstPeriod), "scale.burst_period: the burst quantile also guesses from the load this long before, when that has been sharper (0s: none)")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	given := 0
	for _, s := range []string{*input, *sumOf, *gentd, *arrivals, *servegen} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return usageError(stderr, fs, "give one of --input FILE, --sum-of GLOB, --arrivals FILE, --gentd26 FILE or --servegen-clients GLOB")
	}
	if (*perReplica > 0) == (*peakReplicas > 0) {
		return usageError(stderr, fs, "give one of --capacity REQS_PER_REPLICA (> 0) or --peak-replicas N (> 0)")
	}
	var errs []error
	durationOf := func(name, s string, zeroOK bool) time.Duration {
		if s == "" {
			return 0
		}
		if d, err := time.ParseDuration(s); zeroOK && err == nil && d == 0 {
			return 0
		}
		d, err := cliDuration(name, s)
		if err != nil {
			errs = append(errs, err)
		}
		return d
	}
	startup := durationOf("--startup", *startupS, true)
	stepD := durationOf("--step", *stepS, false)
	resample := durationOf("--resample", *resampleS, false)
	if resample > 0 && *input == "" && *sumOf == "" {
		errs = append(errs, errors.New("--resample reads --input or --sum-of files; --arrivals counts requests in each --step, and --gentd26 is per minute"))
	}
	warmup := durationOf("--warmup", *warmupS, false)
	var windows []time.Duration
	for _, w := range strings.Split(*hpaWindowS, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			errs = append(errs, fmt.Errorf("--hpa-window %q: an empty item; want durations such as 5m,30m (0s: none)", *hpaWindowS))
			continue
		}
		d := durationOf("--hpa-window", w, true)
		if slices.Contains(windows, d) {
			errs = append(errs, fmt.Errorf("--hpa-window %s: %s is listed twice", *hpaWindowS, w))
		}
		windows = append(windows, d)
	}
	horizon := durationOf("--horizon", *horizonS, false)
	period := durationOf("--period", *periodS, false)
	cooldown := durationOf("--cooldown", *cooldownS, true)
	hold := durationOf("--hold", *holdS, true)
	burstWindow := durationOf("--burst-window", *burstWindowS, false)
	burstMean := durationOf("--burst-mean", *burstMeanS, false)
	burstPeriod := durationOf("--burst-period", *burstPeriodS, true)
	if !(*burstQ >= 0 && *burstQ <= rulefmt.MaxScaleBurstQuantile) {
		errs = append(errs, fmt.Errorf("--burst-quantile %g: want a number in [0, %g]", *burstQ, rulefmt.MaxScaleBurstQuantile))
	}
	levels, err := floatList("--level", *levelS, func(v float64) bool { return v > 0 && v < 1 }, "a number in (0, 1)")
	if err != nil {
		errs = append(errs, err)
	}
	if !(*forecastLevel > 0 && *forecastLevel < 1) {
		errs = append(errs, fmt.Errorf("--forecast-level %g: want a number in (0, 1)", *forecastLevel))
	}
	var errorScales []float64
	if *whatIfS != "" {
		errorScales, err = floatList("--what-if-errors", *whatIfS, func(v float64) bool { return v >= 0 && v <= 1 }, "a number in [0, 1]")
		if err != nil {
			errs = append(errs, err)
		}
	}
	if *minReplicas < 0 || *maxReplicas < 0 || (*maxReplicas > 0 && *maxReplicas < *minReplicas) {
		errs = append(errs, fmt.Errorf("--min-replicas %d, --max-replicas %d: want 0 ≤ min ≤ max (max 0: none)", *minReplicas, *maxReplicas))
	}
	targets, err := floatList("--hpa-target", *hpaTargetS, func(v float64) bool { return v > 0 && v <= 1 }, "a share of the capacity in (0, 1]")
	if err != nil {
		errs = append(errs, err)
	}
	if *stable < 1 {
		errs = append(errs, fmt.Errorf("--scale-down-stable-intervals %d: want at least 1", *stable))
	}
	margins, err := floatList("--scale-down-margin", *marginS, func(v float64) bool { return v >= 0 && v <= rulefmt.MaxScaleDownMargin },
		fmt.Sprintf("a share of the capacity in [0, %g]", rulefmt.MaxScaleDownMargin))
	if err != nil {
		errs = append(errs, err)
	} else if len(margins) > 1 && !*frontierOn {
		errs = append(errs, fmt.Errorf("--scale-down-margin %s: several margins are replayed with --frontier", *marginS))
	}
	fo, err := frontierFlags(fs, *frontierOn, *startupsS, *ablationS, *model, *bootstrap, *seed, *servegen != "")
	if err != nil {
		errs = append(errs, err)
	}
	if _, ok := timeUnits[*timeUnit]; !ok {
		errs = append(errs, fmt.Errorf("--time-unit %q: want auto, s or ms", *timeUnit))
	}
	if *timeField != "" && *arrivals == "" {
		errs = append(errs, fmt.Errorf("--time-field %q names the time of a log of requests, read with --arrivals", *timeField))
	}
	if _, err := forecasting.New(forecasting.Options{Step: time.Minute, Model: *model}); err != nil {
		errs = append(errs, fmt.Errorf("--model: %w", err))
	}
	if *gentdQueue != "" && *gentd == "" {
		errs = append(errs, errors.New("--gentd26-queue is the queue of the --gentd26 trace"))
	}
	if !(*waitingPer > 0) {
		errs = append(errs, fmt.Errorf("--waiting-per-replica %g: want more than 0", *waitingPer))
	}
	if err := errors.Join(errs...); err != nil {
		return usageError(stderr, fs, err.Error())
	}

	var (
		series  *ingest.EvenSeries
		parts   [][]float64
		waiting []float64
		name    = *input
	)
	switch {
	case *sumOf != "":
		// Each part is a client's load: one below 0 is as wrong as a sum
		// below 0, even where the others make up for it.
		series, parts, err = readParts(*sumOf, resample, *counts, rules.CheckLoad)
		name = fmt.Sprintf("the sum of the %d files matching %s", len(parts), *sumOf)
	case *servegen != "":
		step := cmp.Or(stepD, time.Minute)
		series, err = drawServeGen(*servegen, step, *seed)
		name = fmt.Sprintf("the requests drawn from the ServeGen clients matching %s, per %s (seed %d)", *servegen, dur.Format(step), *seed)
	case *gentd != "":
		series, err = readGenTD26(*gentd, *requestType)
		name = fmt.Sprintf("%s (%s, per minute)", *gentd, *requestType)
		if err == nil && *gentdQueue != "" {
			waiting, err = readWaiting(*gentdQueue, series)
			name += fmt.Sprintf(", the queue of %s waiting", *gentdQueue)
		}
	case *arrivals != "":
		step := cmp.Or(stepD, time.Minute)
		series, err = readArrivals(*arrivals, ingest.ArrivalsOptions{Step: step, Unit: timeUnits[*timeUnit], TimeField: *timeField})
		name = fmt.Sprintf("%s (requests per %s)", *arrivals, dur.Format(step))
		if err == nil && *timeUnit == "auto" && series.Start < ingest.RelativeBefore {
			// Times counted from the log's start carry no unit: seconds
			// and milliseconds both parse. Say which was taken.
			span := time.Duration(len(series.Values)) * series.Step
			fmt.Fprintf(stderr, "inferwatch backtest scale: note: %s: the times count from %s, read as seconds: the log spans %s; if they are milliseconds, give --time-unit ms\n",
				*arrivals, time.UnixMilli(series.Start).UTC().Format(time.RFC3339), pmodel.Duration(span))
		}
	default:
		opts := ingest.RowsOptions{RepeatHint: "rows must not repeat a timestamp; a log of requests, one a row, is read with --arrivals, and --resample STEP averages the samples in each step"}
		series, err = readSeries(*input, opts, resample, *counts)
	}
	if err == nil {
		err = rules.CheckLoad(name, series)
	}
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch backtest scale:", err)
		return 1
	}
	if note := series.GridNote(name); note != "" {
		fmt.Fprintln(stderr, "inferwatch backtest scale:", note)
	}
	if *counts {
		perSecond := 1 / series.Step.Seconds()
		for i := range series.Values {
			series.Values[i] *= perSecond
		}
		for _, p := range parts {
			for i := range p {
				p[i] *= perSecond
			}
		}
	}
	if stepD != 0 && stepD != series.Step && *servegen == "" {
		if stepD < series.Step || stepD%series.Step != 0 {
			fmt.Fprintf(stderr, "inferwatch backtest scale: --step %s is not a multiple of the series' step %s\n", *stepS, series.Step)
			return 2
		}
		k := int(stepD / series.Step)
		series = series.Average(k)
		if waiting != nil {
			waiting = ingest.AverageValues(waiting, k)
		}
		for i, p := range parts {
			parts[i] = ingest.AverageValues(p, k)
		}
	}
	if *writeSeries != "" {
		if err := writeReplayedSeries(*writeSeries, series); err != nil {
			fmt.Fprintln(stderr, "inferwatch backtest scale:", err)
			return 1
		}
	}
	if horizon > 0 && (horizon+series.Step-1)/series.Step > 10_000 {
		fmt.Fprintf(stderr, "inferwatch backtest scale: --horizon %s is more than 10000 steps of %s\n", dur.Format(horizon), series.Step)
		return 2
	}
	if int(period/series.Step) < 2 {
		fmt.Fprintf(stderr, "inferwatch backtest scale: --period %s is less than two steps of %s\n", *periodS, series.Step)
		return 2
	}
	fc, sc := rules.ScaleRules(series.Step, rules.ScaleSettings{Model: *model, Period: period, Horizon: horizon, Startup: startup,
		Cooldown: cooldown, Hold: hold, BurstQuantile: *burstQ, BurstWindow: burstWindow, BurstMean: burstMean, BurstPeriod: burstPeriod, MinReplicas: *minReplicas, MaxReplicas: *maxReplicas, StableIntervals: *stable,
		ScaleDownMargin: margins[0], WaitingPerReplica: *waitingPer, BottomUp: parts != nil})
	fc.Level = *forecastLevel
	warm := int(warmup / series.Step)
	if warmup == 0 {
		warm = rules.DefaultWarmup(period, series.Step, len(series.Values))
	}
	b := rules.ScaleBacktest{T0: series.Start, Step: series.Step, Load: series.Values, Parts: parts, Capacity: *perReplica,
		PeakReplicas: *peakReplicas, Startup: startup, Warmup: warm, Forecast: fc, Scale: sc,
		Levels: levels, Targets: targets, Windows: windows, ErrorScales: errorScales, Trace: *writeDecisions != "",
		Reactive: capacity.ReactivePolicy{MinReplicas: *minReplicas, MaxReplicas: *maxReplicas}, Waiting: waiting}
	if *frontierOn {
		fo.Margins, fo.FixedHorizon = margins, horizon
		if fo.Targets == nil {
			fo.Targets = targets
		}
		return runFrontier(ctx, b, fo, name, *plotFile, *asJSON, stdout, stderr)
	}
	rep, err := rules.BacktestScale(ctx, b)
	if err != nil {
		fmt.Fprintf(stderr, "inferwatch backtest scale: %s: %v\n", name, err)
		return 1
	}
	rep.Input = name
	if *writeDecisions != "" {
		if err := writeScaleTrace(*writeDecisions, rep.Trace, rep.Policies); err != nil {
			fmt.Fprintln(stderr, "inferwatch backtest scale:", err)
			return 1
		}
	}
	if *asJSON {
		return writeJSON(stdout, stderr, rep)
	}
	writeScaleText(stdout, rep)
	return 0
}

// floatList parses a comma-separated list of numbers for flag, each of
// which must satisfy ok (want says how), none twice.
func floatList(flag, s string, ok func(float64) bool, want string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		switch {
		case err != nil || !ok(v):
			return nil, fmt.Errorf("%s %s: %q is not %s", flag, s, f, want)
		case slices.Contains(out, v):
			return nil, fmt.Errorf("%s %s: %s is listed twice", flag, s, f)
		}
		out = append(out, v)
	}
	return out, nil
}

func writeReplayedSeries(path string, s *ingest.EvenSeries) error {
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i, v := range s.Values {
		b.WriteString(strconv.FormatInt((s.Start+int64(i)*s.Step.Milliseconds())/1000, 10))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("--write-series: %w", err)
	}
	return nil
}

// writeScaleTrace writes the decisions of a replay as CSV: the first
// forecast level's and the first reactive policy's under plain names,
// and each other's after the reason, its columns named with its level, or
// its target and window, then each what-if lane's, named with its level
// and its scale of the errors.
func writeScaleTrace(path string, trace []rules.ScaleStep, policies []rules.PolicyFigures) error {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	var levels, whatIfs []string
	var reactives []string
	for _, p := range policies {
		switch p.Policy {
		case "forecast":
			levels = append(levels, "level_"+g(p.Level))
		case "what-if":
			whatIfs = append(whatIfs, "what_if_level_"+g(p.Level)+"_errors_"+g(p.ErrorScale))
		case "reactive":
			reactives = append(reactives, "target_"+g(p.HPATarget)+"_window_"+
				dur.Format(time.Duration(p.HPAWindowSecs*float64(time.Second))))
		}
	}
	header := []string{"timestamp", "load", "desired_replicas", "predicted_load", "predicted_upper", "tier", "reactive_replicas", "foresight_replicas", "reason"}
	// A scale signal's columns, named after a lane, and their values.
	signalColumns := func(lane string) {
		for _, c := range []string{"desired_replicas", "predicted_load", "predicted_upper", "tier", "reason"} {
			header = append(header, c+"_"+lane)
		}
	}
	signal := func(row []string, f alerting.ScaleData) []string {
		return append(row, strconv.Itoa(f.DesiredReplicas), g(float64(f.PredictedLoad)), g(float64(f.PredictedUpper)), strconv.Itoa(f.Tier), f.Reason)
	}
	for _, l := range levels[1:] {
		signalColumns(l)
	}
	for _, r := range reactives[1:] {
		header = append(header, "reactive_replicas_"+r)
	}
	for _, l := range whatIfs {
		signalColumns(l)
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(header)
	row := make([]string, 0, len(header))
	for _, s := range trace {
		f := s.Forecast[0]
		row = append(row[:0], strconv.FormatInt(s.Time.Unix(), 10), g(s.Load), strconv.Itoa(f.DesiredReplicas), g(float64(f.PredictedLoad)),
			g(float64(f.PredictedUpper)), strconv.Itoa(f.Tier), strconv.Itoa(s.Reactive[0]), strconv.Itoa(s.Foresight), f.Reason)
		for _, f := range s.Forecast[1:] {
			row = signal(row, f)
		}
		for _, r := range s.Reactive[1:] {
			row = append(row, strconv.Itoa(r))
		}
		for _, f := range s.WhatIf {
			row = signal(row, f)
		}
		w.Write(row)
	}
	w.Flush()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--write-decisions: %w", err)
	}
	return nil
}

func writeScaleText(w io.Writer, rep *rules.ScaleReport) {
	fmt.Fprintf(w, "backtest scale of %s\n", rep.Input)
	d := func(secs float64) string { return dur.Format(time.Duration(secs * float64(time.Second))) }
	fmt.Fprintf(w, "  %d steps of %s; %d decisions from %s after a warm-up of %d steps\n",
		rep.Steps, d(rep.StepSeconds), rep.Decisions, rep.Start, rep.WarmupSteps)
	capFrom := ""
	if rep.CapacityFrom != "" {
		capFrom = " (" + rep.CapacityFrom + ")"
	}
	fmt.Fprintf(w, "  capacity %.4g req/s per replica%s; peak load %.4g req/s; start-up %s; deciding on the forecast's next %s (it reaches %s); reactive scale-down window %s\n",
		rep.Capacity, capFrom, rep.PeakLoad, d(rep.StartupSeconds), d(rep.HorizonSeconds), d(rep.ForecastHorizonSeconds), d(rep.HPAWindowSecs))
	sp := rep.ScalePolicy
	replicas := fmt.Sprintf("at least %d replicas", sp.MinReplicas)
	if sp.MinReplicas == 1 {
		replicas = "at least 1 replica"
	}
	if sp.MaxReplicas > 0 {
		replicas = fmt.Sprintf("%d to %d replicas", sp.MinReplicas, sp.MaxReplicas)
	}
	fmt.Fprintf(w, "  forecast model %s; hold %s; scale-down margin %g, %d stable intervals, cooldown %s; %s\n\n",
		rep.Model, d(sp.HoldSeconds), sp.ScaleDownMargin, sp.ScaleDownStableIntervals, d(sp.CooldownSeconds), replicas)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\treplica-minutes\tunder-provisioned minutes\tworst shortfall (req/s)\tscale changes\t")
	var f, r *rules.PolicyFigures
	for i, p := range rep.Policies {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.4g\t%d\t\n", p.Name(rep), p.ReplicaMinutes, p.UnderMinutes, p.WorstShortfall, p.Changes)
		switch {
		case p.Policy == "forecast" && f == nil:
			f = &rep.Policies[i]
		case p.Policy == "reactive" && r == nil:
			r = &rep.Policies[i]
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s / %s: replica-minutes %s, under-provisioned minutes %s\n", f.Name(rep), r.Name(rep), ratio(f.ReplicaMinutes, r.ReplicaMinutes), ratio(f.UnderMinutes, r.UnderMinutes))
	if fr := rep.Frontier; fr != nil {
		if p := fr.ForecastWithin; p != nil {
			fmt.Fprintf(w, "within %s's %.0f replica-minutes, %s is short least: %.0f replica-minutes (%s), %.0f under-provisioned minutes (%s)\n",
				r.Name(rep), r.ReplicaMinutes, p.Name(rep), p.ReplicaMinutes, ratio(p.ReplicaMinutes, r.ReplicaMinutes), p.UnderMinutes, ratio(p.UnderMinutes, r.UnderMinutes))
		} else if p := fr.CheapestForecast; p != nil {
			fmt.Fprintf(w, "no forecast level replayed stays within %s's %.0f replica-minutes; the cheapest, %s, pays %.0f (%s) and is short %.0f minutes (%s)\n",
				r.Name(rep), r.ReplicaMinutes, p.Name(rep), p.ReplicaMinutes, ratio(p.ReplicaMinutes, r.ReplicaMinutes), p.UnderMinutes, ratio(p.UnderMinutes, r.UnderMinutes))
		}
		if p := fr.ReactiveAtCost; p != nil {
			fmt.Fprintf(w, "within %s's %.0f replica-minutes, %s is short least: %.0f replica-minutes, %.0f under-provisioned minutes; the forecast is short %s as often\n",
				f.Name(rep), f.ReplicaMinutes, p.Name(rep), p.ReplicaMinutes, p.UnderMinutes, ratio(f.UnderMinutes, p.UnderMinutes))
		} else {
			fmt.Fprintf(w, "every reactive target replayed pays more than %s's %.0f replica-minutes\n", f.Name(rep), f.ReplicaMinutes)
		}
		if p := fr.ReactiveWithin; p != nil {
			fmt.Fprintf(w, "short at most %s's %.0f minutes, %s pays least: %.0f replica-minutes, %s of the forecast's\n",
				f.Name(rep), f.UnderMinutes, p.Name(rep), p.ReplicaMinutes, ratio(p.ReplicaMinutes, f.ReplicaMinutes))
		} else if p := fr.LeastShortReactive; p != nil {
			fmt.Fprintf(w, "no reactive target replayed is short at most %s's %.0f minutes; the least short, %s, is short %.0f minutes and pays %.0f replica-minutes, %s of the forecast's\n",
				f.Name(rep), f.UnderMinutes, p.Name(rep), p.UnderMinutes, p.ReplicaMinutes, ratio(p.ReplicaMinutes, f.ReplicaMinutes))
		}
	}
	for _, p := range rules.WhatIfAtCost(rep.Policies, r) {
		verb := "stays within"
		if p.ReplicaMinutes > r.ReplicaMinutes {
			verb = "is the cheapest, none staying within"
		}
		fmt.Fprintf(w, "%s %s %s's %.0f replica-minutes: %.0f (%s), short %.0f minutes (%s)\n", p.Name(rep), verb, r.Name(rep), r.ReplicaMinutes,
			p.ReplicaMinutes, ratio(p.ReplicaMinutes, r.ReplicaMinutes), p.UnderMinutes, ratio(p.UnderMinutes, r.UnderMinutes))
	}
	if f.FallbackDecisions > 0 {
		fmt.Fprintf(w, "%d of the forecast policy's %d decisions were on a forecast falling back for lack of history\n", f.FallbackDecisions, rep.Decisions)
	}
	if f.UnknownMinutes > 0 {
		fmt.Fprintf(w, "%.0f minutes had no load sample and were not judged\n", f.UnknownMinutes)
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		if a == 0 {
			return "1 (both 0)"
		}
		return "n/a (reactive 0)"
	}
	return strconv.FormatFloat(a/b, 'f', 3, 64)
}
