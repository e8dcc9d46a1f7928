package rulefmt

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/inferwatch/inferwatch/internal/dur"
)

// MaxForecastPoints bounds forecast.history/step. A history longer than
// MaxPointsPerQuery steps is fetched in consecutive range queries, so two
// weeks at a one-minute step (what the weekly models need) fit.
const MaxForecastPoints = 50_000

// Defaults of forecast and scale rules.
const (
	DefaultForecastHistory          = 7 * 24 * time.Hour
	DefaultForecastHorizon          = 10 * time.Minute
	DefaultForecastModel            = "auto"
	DefaultForecastLevel            = 0.9
	DefaultScaleLevel               = 0.95
	DefaultForecastPeriod           = 24 * time.Hour
	DefaultScaleDownStableIntervals = 3
	DefaultScaleCooldown            = 5 * time.Minute
	DefaultScaleHold                = 30 * time.Minute
	DefaultScaleBurstQuantile       = 0.98
	DefaultScaleBurstWindow         = 6 * time.Hour
	DefaultScaleBurstMean           = 10 * time.Minute
	DefaultScaleBurstPeriod         = 24 * time.Hour
	DefaultScaleStartup             = 3 * time.Minute
	DefaultScaleDownMargin          = 0.15 // forecasting.DefaultScaleDownMargin
	MaxScaleDownMargin              = 0.5
	MaxScaleBurstQuantile           = 0.999
	DefaultScaleGPUMemoryHigh       = 0.8
	DefaultScaleWaitingPerReplica   = 5
	DefaultScaleP99Near             = 0.9
)

// Forecast configures a forecast rule: the series of Expr are forecast
// Horizon ahead from their History, and each evaluation publishes the
// outlook from the newest point on <prefix>.forecasts.<rule name>.
type Forecast struct {
	// Expr is the query whose series are forecast (a rate or a count: the
	// forecasts are clipped at zero).
	Expr string
	// Step is the spacing of the forecast points (default: the rule's step,
	// i.e. the group interval). It is also Rule.Step.
	Step time.Duration
	// History is how much past a model is fitted on (default 7d, or
	// 10,000 steps when that is shorter; at most MaxForecastPoints steps).
	// It is also Rule.Lookback: a forecast rule has no separate lookback.
	History time.Duration
	// Horizons are the lead times the rule serves, ascending, each rounded
	// up to whole steps (forecast.horizons, default [10m]; forecast.horizon
	// is the form for one): each output carries the peak and its upper
	// bound over each, and a scale rule chooses one. Horizon is the
	// longest: the forecast points reach it.
	Horizons []time.Duration
	Horizon  time.Duration
	// Model is a forecasting model name (default "auto"); checked by
	// alerting.Compile.
	Model string
	// Level is the coverage of the prediction interval, in (0, 1)
	// (default 0.9).
	Level float64
	// Period is the seasonal period (default 1d).
	Period time.Duration
	// BottomUp, set by sum_by, forecasts sums of Expr's series instead of
	// each series: the series that share the values of the SumBy labels
	// are the parts of one sum (all of them when SumBy is empty), each part
	// forecast on its own and the forecasts added up (forecasting.Sum). A
	// service's traffic from its clients' is the use: a client's daily
	// scheduled steps are predictable in its own series and lost in the
	// sum's noise.
	BottomUp bool
	SumBy    []string
	// ScaleHorizons are horizons the group's scale rules decide on that
	// Horizons lacks (a scale rule's default, DefaultScaleHorizon, when it
	// falls short of the longest): the rule hands its peaks over them to
	// those rules and publishes only Horizons. Filled by Load.
	ScaleHorizons []time.Duration
	// ScaleLevels are the levels the group's scale rules plan with
	// (scale.level) other than Level, ascending: the rule hands the upper
	// end of its forecast at each of them to those rules, from the same
	// calibration errors, and publishes only the interval at Level.
	// Filled by Load.
	ScaleLevels []float64
}

// Scale configures a scale rule: for each target (each series of the
// Replicas query) it combines the forecast of the Forecast rule, the
// per-replica capacity and the current state of the target into a desired
// number of replicas, published on <prefix>.scale.<rule name>.
type Scale struct {
	// Forecast names the forecast rule of the same group whose outlook
	// is the predicted load (requests per second).
	Forecast string
	// Horizon is the one of the forecast rule's horizons whose peak the
	// decision takes: how far ahead the autoscaler fed by the signal
	// looks, its interval plus a replica's start-up. Left out, Load fills
	// in DefaultScaleHorizon. HorizonPos is where it was written.
	Horizon    time.Duration
	HorizonPos Pos
	// Startup is how long a replica asked for takes to serve (default
	// 3m): with the interval between decisions it sets the default
	// Horizon.
	Startup time.Duration
	// Level is the coverage, in (0, 1), of the forecast interval whose
	// upper end the decision plans with (default 0.95): the forecast
	// rule's forecast.level sets only the interval it publishes.
	Level float64
	// On lists the labels that match a target with the series of the
	// forecast and of the other queries (default: every label of the
	// Replicas series but __name__). A query series without any of these
	// labels (a constant such as `4`) applies to every target.
	On []string
	// Replicas is the query of the current replicas per target, e.g.
	// count by (model) (vllm:num_requests_running). Required: its series
	// are the targets.
	Replicas string
	// GPUMemory (a fraction in [0, 1]), Waiting (requests waiting, summed
	// over the target's replicas) and P99 (seconds) are optional queries
	// for tiers 1 and 2.
	GPUMemory, Waiting, P99 string
	// CapacityPerReplica is the request rate one replica sustains within
	// its SLO, in requests per second; or derive it from SLO.
	CapacityPerReplica float64
	// SLO, when set, gives the latency objective: tier 2 fires when P99
	// nears it, and without CapacityPerReplica the capacity is derived
	// from it with Little's law.
	SLO *SLO
	// MinReplicas and MaxReplicas clamp the desired replicas (default 1
	// and no maximum, 0).
	MinReplicas, MaxReplicas int
	// ScaleDownStableIntervals is how many evaluations in a row must ask
	// for fewer replicas before the signal goes down (default 3);
	// Cooldown how long after a change it must wait (default 5m).
	ScaleDownStableIntervals int
	Cooldown                 time.Duration
	// ScaleDownMargin is the hysteresis band of a step down: the signal
	// goes down only to replicas that would run the predicted load at no
	// more than (1 − ScaleDownMargin) of their capacity (default 0.15; 0:
	// none; at most MaxScaleDownMargin).
	ScaleDownMargin float64
	// Hold is how long a load observed keeps asking for its replicas: the
	// forecast tier asks for at least what the highest load observed over
	// the last Hold needs (default 30m; 0: none).
	Hold time.Duration
	// BurstQuantile is the coverage of the headroom the load's own past
	// moves ask for (forecasting.BurstLoad): the forecast tier asks for
	// at least that quantile of the load a horizon ahead, calibrated on
	// the last BurstWindow of the load, guessed from the mean of its last
	// BurstMean or from the load a BurstPeriod before, whichever has been
	// sharper (default 0.98; 0: none; BurstWindow default 6h, BurstMean
	// 10m, BurstPeriod 24h, 0: the recent mean only).
	BurstQuantile                       float64
	BurstWindow, BurstMean, BurstPeriod time.Duration
	// GPUMemoryHigh (default 0.8), WaitingPerReplica (default 5) and
	// P99Near (default 0.9: 90 % of the SLO) are the thresholds of tiers
	// 1 and 2.
	GPUMemoryHigh, WaitingPerReplica, P99Near float64
}

// SLO is a latency objective.
type SLO struct {
	// P99 is the objective for the 99th percentile of request latency.
	P99 time.Duration
	// Concurrency is a query (or a number) of the requests one replica
	// holds in flight while meeting the objective; with P99 it gives the
	// capacity per replica by Little's law, λ = L / W.
	Concurrency string
}

// DefaultForecast is a forecast block with every default filled in, at
// the given step: what `forecast: {expr: …}` reads as.
func DefaultForecast(step time.Duration) Forecast {
	fc := Forecast{Step: step, History: DefaultForecastHistory, Horizon: DefaultForecastHorizon, Horizons: []time.Duration{DefaultForecastHorizon},
		Model: DefaultForecastModel, Level: DefaultForecastLevel, Period: DefaultForecastPeriod}
	if step > 0 {
		fc.History = min(fc.History, 10_000*step)
		fc.Horizon = roundUp(fc.Horizon, step)
		fc.Horizons = []time.Duration{fc.Horizon}
	}
	return fc
}

// DefaultScale is a scale block with every default filled in (its
// horizon 0: the forecast rule's longest, unless Load fills in
// DefaultScaleHorizon).
func DefaultScale() Scale {
	return Scale{MinReplicas: 1, ScaleDownStableIntervals: DefaultScaleDownStableIntervals, Cooldown: DefaultScaleCooldown, Hold: DefaultScaleHold,
		BurstQuantile: DefaultScaleBurstQuantile, BurstWindow: DefaultScaleBurstWindow, BurstMean: DefaultScaleBurstMean, BurstPeriod: DefaultScaleBurstPeriod,
		Startup: DefaultScaleStartup, Level: DefaultScaleLevel,
		ScaleDownMargin: DefaultScaleDownMargin,
		GPUMemoryHigh:   DefaultScaleGPUMemoryHigh, WaitingPerReplica: DefaultScaleWaitingPerReplica, P99Near: DefaultScaleP99Near}
}

var forecastKeys = []string{"expr", "step", "history", "horizon", "horizons", "model", "level", "period", "sum_by"}

// forecast reads a forecast block. step is the rule's step (the default).
func (p *parser) forecast(n *yaml.Node, step time.Duration) *Forecast {
	d := DefaultForecast(step)
	fc := &d
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "forecast must be a mapping with at least expr (forecast: {expr: QUERY, horizon: 10m}), got %s", kind(n))
		return fc
	}
	f := p.fields(n, "forecast", forecastKeys, nil)
	if kv, ok := f["expr"]; ok {
		fc.Expr = p.query(kv, "forecast.expr")
	} else {
		p.errorf(n, "forecast needs expr (the query whose series are forecast)")
	}
	ok := true
	var good bool
	kv, present := f["step"]
	fc.Step, good = p.positive(kv, present, "forecast.step", step, false)
	ok = ok && good
	stepOK := good && fc.Step > 0
	kv, present = f["history"]
	def := DefaultForecastHistory
	if fc.Step > 0 {
		def = min(def, 10_000*fc.Step)
	}
	fc.History, good = p.positive(kv, present, "forecast.history", def, false)
	ok = ok && good
	horizons := p.horizons(f)
	kv, present = f["period"]
	fc.Period, good = p.positive(kv, present, "forecast.period", DefaultForecastPeriod, false)
	ok = ok && good
	if kv, present := f["model"]; present {
		if s, _ := p.str(kv.v, "forecast.model"); strings.TrimSpace(s) != "" {
			fc.Model = strings.TrimSpace(s)
		}
	}
	if kv, present := f["sum_by"]; present {
		fc.BottomUp = true
		fc.SumBy = p.labelList(resolve(kv.v), "forecast.sum_by")
	}
	if kv, present := f["level"]; present {
		fc.Level = p.number(kv, "forecast.level", DefaultForecastLevel, 0, 1, true)
		if fc.Level == 1 {
			p.errorf(resolve(kv.v), "forecast.level must be below 1, got 1")
			fc.Level = DefaultForecastLevel
		}
	}
	if stepOK {
		fc.Horizons = p.checkHorizons(horizons, fc.Step)
		if len(fc.Horizons) == 0 {
			fc.Horizons = []time.Duration{roundUp(DefaultForecastHorizon, fc.Step)}
		}
		fc.Horizon = fc.Horizons[len(fc.Horizons)-1]
	}
	if !ok || fc.Step <= 0 {
		return fc
	}
	switch {
	case fc.History < 2*fc.Step:
		p.errorf(n, "forecast.history %s must hold at least two steps of %s", dur.Format(fc.History), dur.Format(fc.Step))
	case fc.History/fc.Step > MaxForecastPoints || (fc.History/fc.Step == MaxForecastPoints && fc.History%fc.Step != 0):
		p.errorf(n, "forecast.history %s / step %s gives more than %d points per series; raise the step or shorten the history",
			dur.Format(fc.History), dur.Format(fc.Step), MaxForecastPoints)
	}
	if fc.Period < 2*fc.Step {
		p.errorf(n, "forecast.period %s must hold at least two steps of %s", dur.Format(fc.Period), dur.Format(fc.Step))
	}
	return fc
}

// horizon is one horizon as written, with its node for errors.
type horizon struct {
	d    time.Duration
	node *yaml.Node
	key  string // forecast.horizon or forecast.horizons
}

// horizons reads forecast.horizon (one) or forecast.horizons (a list),
// reporting what does not read as a duration > 0 and returning the rest;
// none gives nil (the default).
func (p *parser) horizons(f map[string]pair) []horizon {
	one, hasOne := f["horizon"]
	list, hasList := f["horizons"]
	switch {
	case hasOne && hasList:
		p.errorf(one.k, "forecast has both horizon and horizons; keep horizons (horizon is the form for one)")
		return nil
	case hasOne:
		if d, ok := p.positive(one, true, "forecast.horizon", 0, false); ok {
			return []horizon{{d, resolve(one.v), "forecast.horizon"}}
		}
		return nil
	case !hasList:
		return nil
	}
	v := resolve(list.v)
	switch {
	case v.Kind != yaml.SequenceNode:
		p.errorf(v, "forecast.horizons must be a list of durations such as [2m, 3m, 10m], got %s", kind(v))
		return nil
	case len(v.Content) == 0:
		p.errorf(v, "forecast.horizons is empty; list at least one duration, or leave it out for the default [10m]")
		return nil
	}
	var out []horizon
	for _, item := range v.Content {
		if d, ok := p.positive(pair{k: list.k, v: item}, true, "forecast.horizons", 0, false); ok {
			out = append(out, horizon{d, resolve(item), "forecast.horizons"})
		}
	}
	return out
}

// checkHorizons rounds the horizons up to whole steps, checks that each
// is at least one step and at most 10,000, and returns them ascending
// without repeats (a repeat is an error at the second).
func (p *parser) checkHorizons(hs []horizon, step time.Duration) []time.Duration {
	var out []time.Duration
	seen := map[time.Duration]time.Duration{}
	for _, h := range hs {
		switch {
		case h.d < step:
			p.errorf(h.node, "%s %s is shorter than the step %s; forecast at least one step ahead", h.key, dur.Format(h.d), dur.Format(step))
			continue
		case h.d/step > 10_000:
			p.errorf(h.node, "%s %s is more than 10000 steps of %s; raise the step", h.key, dur.Format(h.d), dur.Format(step))
			continue
		}
		r := roundUp(h.d, step)
		if first, dup := seen[r]; dup {
			msg := fmt.Sprintf("%s lists %s twice", h.key, dur.Format(r))
			if first != h.d || r != h.d {
				msg = fmt.Sprintf("%s %s and %s are both %s in whole steps of %s", h.key, dur.Format(first), dur.Format(h.d), dur.Format(r), dur.Format(step))
			}
			p.errorf(h.node, "%s; list each once", msg)
			continue
		}
		seen[r] = h.d
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// roundUp is d rounded up to whole steps.
func roundUp(d, step time.Duration) time.Duration {
	if step <= 0 {
		return d
	}
	return (d + step - 1) / step * step
}

var scaleKeys = []string{"forecast", "horizon", "startup", "level", "on", "replicas", "gpu_memory", "waiting", "p99", "capacity_per_replica", "slo",
	"min_replicas", "max_replicas", "scale_down_stable_intervals", "scale_down_margin", "cooldown", "hold",
	"burst_quantile", "burst_window", "burst_mean", "burst_period", "gpu_memory_high", "waiting_per_replica", "p99_near"}

func (p *parser) scale(n *yaml.Node) *Scale {
	d := DefaultScale()
	s := &d
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "scale must be a mapping with at least forecast, replicas and capacity_per_replica or slo, got %s", kind(n))
		return s
	}
	f := p.fields(n, "scale", scaleKeys, nil)
	if kv, ok := f["forecast"]; ok {
		s.Forecast, _ = p.str(kv.v, "scale.forecast")
		if s.Forecast == "" {
			p.errorf(resolve(kv.v), "scale.forecast must name a forecast rule of this group")
		}
	} else {
		p.errorf(n, "scale needs forecast (the name of a forecast rule of this group)")
	}
	if kv, ok := f["horizon"]; ok {
		s.Horizon, _ = p.positive(kv, true, "scale.horizon", 0, false)
		s.HorizonPos = p.pos(resolve(kv.v))
	}
	kv, present := f["startup"]
	s.Startup, _ = p.positive(kv, present, "scale.startup", DefaultScaleStartup, true)
	if kv, ok := f["level"]; ok {
		s.Level = p.number(kv, "scale.level", DefaultScaleLevel, 0, 1, true)
		if s.Level == 1 {
			p.errorf(resolve(kv.v), "scale.level must be below 1, got 1: no finite bound covers every load")
			s.Level = DefaultScaleLevel
		}
	}
	if kv, ok := f["replicas"]; ok {
		s.Replicas = p.query(kv, "scale.replicas")
	} else {
		p.errorf(n, "scale needs replicas (a query of the current replicas per target, e.g. count by (model) (vllm:num_requests_running))")
	}
	for key, dst := range map[string]*string{"gpu_memory": &s.GPUMemory, "waiting": &s.Waiting, "p99": &s.P99} {
		if kv, ok := f[key]; ok {
			*dst = p.query(kv, "scale."+key)
		}
	}
	if kv, ok := f["on"]; ok {
		s.On = p.labelList(resolve(kv.v), "scale.on")
	}
	if kv, ok := f["capacity_per_replica"]; ok {
		s.CapacityPerReplica = p.number(kv, "scale.capacity_per_replica", 0, 0, math.Inf(1), true)
	}
	if kv, ok := f["slo"]; ok {
		s.SLO = p.slo(resolve(kv.v))
	}
	if s.CapacityPerReplica == 0 && (s.SLO == nil || s.SLO.Concurrency == "") {
		if _, given := f["capacity_per_replica"]; !given {
			p.errorf(n, "scale needs capacity_per_replica (requests/s one replica sustains) or slo with p99 and concurrency to derive it")
		}
	}
	if kv, ok := f["min_replicas"]; ok {
		s.MinReplicas = int(p.integer(kv, "scale.min_replicas", 1, 0, 1e6))
	}
	if kv, ok := f["max_replicas"]; ok {
		s.MaxReplicas = int(p.integer(kv, "scale.max_replicas", 0, 1, 1e6))
		if s.MaxReplicas > 0 && s.MaxReplicas < s.MinReplicas {
			p.errorf(resolve(kv.v), "scale.max_replicas %d is below min_replicas %d", s.MaxReplicas, s.MinReplicas)
		}
	}
	if kv, ok := f["scale_down_stable_intervals"]; ok {
		s.ScaleDownStableIntervals = int(p.integer(kv, "scale.scale_down_stable_intervals", DefaultScaleDownStableIntervals, 1, 1e6))
	}
	if kv, ok := f["scale_down_margin"]; ok {
		s.ScaleDownMargin = p.number(kv, "scale.scale_down_margin", DefaultScaleDownMargin, 0, MaxScaleDownMargin, false)
	}
	kv, present = f["cooldown"]
	s.Cooldown, _ = p.positive(kv, present, "scale.cooldown", DefaultScaleCooldown, true)
	kv, present = f["hold"]
	s.Hold, _ = p.positive(kv, present, "scale.hold", DefaultScaleHold, true)
	if kv, ok := f["burst_quantile"]; ok {
		s.BurstQuantile = p.number(kv, "scale.burst_quantile", DefaultScaleBurstQuantile, 0, MaxScaleBurstQuantile, false)
	}
	kv, present = f["burst_window"]
	s.BurstWindow, _ = p.positive(kv, present, "scale.burst_window", DefaultScaleBurstWindow, false)
	kv, present = f["burst_mean"]
	s.BurstMean, _ = p.positive(kv, present, "scale.burst_mean", DefaultScaleBurstMean, false)
	kv, present = f["burst_period"]
	s.BurstPeriod, _ = p.positive(kv, present, "scale.burst_period", DefaultScaleBurstPeriod, true)
	if kv, ok := f["gpu_memory_high"]; ok {
		s.GPUMemoryHigh = p.number(kv, "scale.gpu_memory_high", DefaultScaleGPUMemoryHigh, 0, 1, true)
	}
	if kv, ok := f["waiting_per_replica"]; ok {
		s.WaitingPerReplica = p.number(kv, "scale.waiting_per_replica", DefaultScaleWaitingPerReplica, 0, math.Inf(1), true)
	}
	if kv, ok := f["p99_near"]; ok {
		s.P99Near = p.number(kv, "scale.p99_near", DefaultScaleP99Near, 0, 1, true)
	}
	return s
}

func (p *parser) slo(n *yaml.Node) *SLO {
	s := &SLO{}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "scale.slo must be a mapping such as {p99: 2s, concurrency: 64}, got %s", kind(n))
		return s
	}
	f := p.fields(n, "scale.slo", []string{"p99", "concurrency"}, nil)
	if kv, ok := f["p99"]; ok {
		s.P99, _ = p.positive(kv, true, "scale.slo.p99", 0, false)
	} else {
		p.errorf(n, "scale.slo needs p99 (the latency objective, e.g. 2s)")
	}
	if kv, ok := f["concurrency"]; ok {
		s.Concurrency = p.query(kv, "scale.slo.concurrency")
	}
	return s
}

// integer reads a whole number in [lo, hi].
func (p *parser) integer(kv pair, name string, def, lo, hi float64) float64 {
	x := p.number(kv, name, def, lo, hi, false)
	if x != math.Trunc(x) {
		p.errorf(resolve(kv.v), "%s must be a whole number, got %g", name, x)
		return def
	}
	return x
}

func (p *parser) labelList(v *yaml.Node, name string) []string {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, "%s must be a list of label names, got %s", name, kind(v))
		return nil
	}
	var out []string
	for _, item := range v.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode || !labelNameRE.MatchString(item.Value) {
			p.errorf(item, "%s: %q is not a label name", name, item.Value)
			continue
		}
		out = append(out, item.Value)
	}
	return out
}

// checkScaleRefs checks what needs the whole group: a scale rule names a
// forecast rule of its group and one of the horizons it serves, and fills
// in the default horizon of one that names none (DefaultScaleHorizon, at
// the group's interval); the forecast rule hands over the upper end at
// each scale rule's level (ScaleLevels).
func (p *parser) checkScaleRefs(rs []Rule, interval time.Duration) {
	kindOf := map[string]Kind{}
	specs := map[string]*Forecast{}
	for _, r := range rs {
		kindOf[r.Name] = r.Kind
		if fc, ok := r.Spec.(*Forecast); ok {
			specs[r.Name] = fc
		}
	}
	for _, r := range rs {
		sc, ok := r.Spec.(*Scale)
		if !ok || sc.Forecast == "" {
			continue
		}
		p.rule = r.Name
		switch k, ok := kindOf[sc.Forecast]; {
		case !ok:
			p.errs.Add(r.Pos, p.group, r.Name, "scale.forecast %q names no rule of this group; add a forecast rule of that name", sc.Forecast)
		case k != KindForecast:
			p.errs.Add(r.Pos, p.group, r.Name, "scale.forecast %q is an %s rule, not a forecast rule", sc.Forecast, k)
		default:
			fc := specs[sc.Forecast]
			p.checkScaleHorizon(r.Name, sc, fc, interval)
			if fc != nil && sc.Level != fc.Level && !slices.Contains(fc.ScaleLevels, sc.Level) {
				fc.ScaleLevels = append(fc.ScaleLevels, sc.Level)
				slices.Sort(fc.ScaleLevels)
			}
		}
	}
	p.rule = ""
}

// forecastRule finishes a forecast or scale rule, once its block is read:
// the keys of an alerting rule have no meaning for it and are errors (expr
// is its kind's noExpr; lookback, when set, says where its lookback comes
// from), and its query, step and lookback are its block's.
func (p *parser) forecastRule(r *Rule, f map[string]pair, lookback string) {
	what := "a " + string(r.Kind) + " rule"
	for _, key := range []string{"lookback", "for", "keep_firing_for", "repeat_interval", "resolve_after_absent", "forget_after", "min_dev"} {
		if kv, ok := f[key]; ok {
			msg := "has no " + key
			if key == "lookback" && lookback != "" {
				msg = lookback
			}
			p.errorf(resolve(kv.k), "%s %s: remove %s", what, msg, key)
		}
	}
	// It raises no alert: nothing resolves or is forgotten on its behalf.
	r.ResolveAfterAbsent, r.ForgetAfter = 0, 0
	switch s := r.Spec.(type) {
	case *Scale:
		r.Expr = s.Replicas
	case *Forecast:
		r.Expr = s.Expr
		r.Step = s.Step
		r.Lookback = s.History
	}
}

// DefaultScaleHorizon is the horizon a scale rule decides on when it
// names none: the replicas asked for at a decision carry the load until
// those asked for at the next one serve, so the time between decisions
// (the interval, or the forecast's step when that is longer) plus a
// replica's start-up, in whole steps, and no further than the forecast
// rule forecasts (its longest horizon).
func DefaultScaleHorizon(step, interval, startup, longest time.Duration) time.Duration {
	return min(roundUp(max(step, interval)+startup, step), longest)
}

// checkScaleHorizon checks that the scale rule's horizon, rounded up to
// the forecast's steps, is one the forecast rule serves, and fills in the
// default (DefaultScaleHorizon), which the forecast rule then hands over
// as one of its ScaleHorizons when it does not serve it.
func (p *parser) checkScaleHorizon(rule string, sc *Scale, fc *Forecast, interval time.Duration) {
	if fc == nil || len(fc.Horizons) == 0 {
		return
	}
	if sc.Horizon == 0 {
		sc.Horizon = DefaultScaleHorizon(fc.Step, interval, sc.Startup, fc.Horizon)
		if !slices.Contains(fc.Horizons, sc.Horizon) && !slices.Contains(fc.ScaleHorizons, sc.Horizon) {
			fc.ScaleHorizons = append(fc.ScaleHorizons, sc.Horizon)
			slices.Sort(fc.ScaleHorizons)
		}
		return
	}
	h := roundUp(sc.Horizon, fc.Step)
	if slices.Contains(fc.Horizons, h) {
		sc.Horizon = h
		return
	}
	served := make([]string, len(fc.Horizons))
	for i, d := range fc.Horizons {
		served[i] = dur.Format(d)
	}
	what := dur.Format(sc.Horizon)
	if h != sc.Horizon {
		what += fmt.Sprintf(" (%s in whole steps of %s)", dur.Format(h), dur.Format(fc.Step))
	}
	p.errs.Add(sc.HorizonPos, p.group, rule, "scale.horizon %s is not a horizon of forecast rule %q, which serves %s; add it to its forecast.horizons or choose one of those",
		what, sc.Forecast, strings.Join(served, ", "))
}

func hasKey(f map[string]pair, key string) bool {
	_, ok := f[key]
	return ok
}
