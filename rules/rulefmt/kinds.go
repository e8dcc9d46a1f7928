package rulefmt

import (
	"time"

	"gopkg.in/yaml.v3"

	"github.com/inferwatch/inferwatch/internal/dur"
)

// Kind is what a rule computes. The kinds of findings (anomaly,
// correlation, decay, knee, spikiness, imbalance) are also the last token
// of the subject their findings are published on; forecast and scale rules
// publish forecasts and scale signals instead.
type Kind string

// The rule kinds, each with its block in the file (an anomaly rule's is
// detector, which may be left out for the default detector).
const (
	KindAnomaly     Kind = "anomaly"
	KindCorrelation Kind = "correlation"
	KindDecay       Kind = "decay"
	KindKnee        Kind = "knee"
	KindSpikiness   Kind = "spikiness"
	KindImbalance   Kind = "imbalance"
	KindForecast    Kind = "forecast"
	KindScale       Kind = "scale"
)

// Spec is the settings of one rule kind: *Detector (anomaly), *Correlate,
// *Decay, *Knee, *Spikiness, *Imbalance, *Forecast or *Scale.
type Spec interface {
	Kind() Kind
}

func (*Detector) Kind() Kind  { return KindAnomaly }
func (*Correlate) Kind() Kind { return KindCorrelation }
func (*Decay) Kind() Kind     { return KindDecay }
func (*Knee) Kind() Kind      { return KindKnee }
func (*Spikiness) Kind() Kind { return KindSpikiness }
func (*Imbalance) Kind() Kind { return KindImbalance }
func (*Forecast) Kind() Kind  { return KindForecast }
func (*Scale) Kind() Kind     { return KindScale }

// kindFormat is what the file format knows of one rule kind: the block
// that holds its settings, how that block is read, and what the keys every
// rule has (expr, lookback) mean for it. The parser of a rule (rule1 in
// load.go) asks the kind's entry of kinds and names no kind itself.
type kindFormat struct {
	kind Kind
	// block is the rule key that holds the kind's settings; a rule that
	// has it is of this kind.
	block string
	// read reads the block into the kind's Spec before the rule's other
	// keys; n is nil when the rule has no block (only the kind of
	// noBlockKind). nil: finish reads it.
	read func(p *parser, n *yaml.Node) Spec
	// noExpr, when set and it returns a message, says that the rule takes
	// no expr, its queries being in its block: the message is the error
	// for a rule that has one. Otherwise expr is the query the rule
	// watches, and the rule needs one.
	noExpr func(Spec) string
	// lookback is the default of lookback, the window the rule judges.
	lookback time.Duration
	// unbounded exempts the rule from MaxPointsPerQuery: it fetches its
	// lookback in parts.
	unbounded bool
	// finish, when set, completes the rule after its other keys: the
	// checks across its block and them, and the settings that depend on
	// its step.
	finish func(p *parser, r *Rule, at ruleNodes)
	// group, when set, checks the rules of this kind against the other
	// rules of their group (a scale rule names a forecast rule).
	group func(p *parser, rs []Rule, interval time.Duration)
}

// ruleNodes are what finish reads and reports at: the rule's block and
// its keys, and whether its lookback was valid.
type ruleNodes struct {
	block      *yaml.Node
	keys       map[string]pair
	lookbackOK bool
}

// noBlockKind is the kind of a rule without a kind block.
const noBlockKind = KindAnomaly

// kinds are the rule kinds of the file format, one entry each. Their order
// is the order blocks are named in when a rule has two.
var kinds = []kindFormat{
	{
		// expr: the series scored point by point; lookback (default 0):
		// the detector's own history, see analysis.NeedsOf.
		kind: KindAnomaly, block: "detector",
		read: func(p *parser, n *yaml.Node) Spec {
			if n == nil {
				return &Detector{Name: DefaultDetector}
			}
			return p.detector(n)
		},
		unbounded: true,
	},
	{
		// correlate.x and correlate.y are the queries; lookback the window
		// the coupling is judged over.
		kind: KindCorrelation, block: "correlate",
		read: func(p *parser, n *yaml.Node) Spec { return p.correlate(n) },
		noExpr: func(Spec) string {
			return "a correlate rule takes its queries from correlate.x and correlate.y, not expr"
		},
		lookback: DefaultLookback,
		finish: func(p *parser, r *Rule, at ruleNodes) {
			if c := r.Spec.(*Correlate); c.YJitter >= r.Lookback && at.lookbackOK {
				p.errorf(at.block, "correlate.y_jitter %s must be shorter than lookback %s", dur.Format(c.YJitter), dur.Format(r.Lookback))
			}
		},
	},
	{
		// expr: the throughput; lookback: the window of its trend.
		kind: KindDecay, block: "decay",
		read:     func(p *parser, n *yaml.Node) Spec { return p.decay(n) },
		lookback: DefaultLookback,
	},
	{
		// forecast.expr is the query and forecast.history its lookback;
		// the rule raises no alert, so it takes none of the alert keys.
		kind: KindForecast, block: "forecast",
		noExpr: func(Spec) string {
			return "a forecast rule takes its query from forecast.expr, not expr: remove expr"
		},
		lookback: DefaultLookback,
		finish: func(p *parser, r *Rule, at ruleNodes) {
			r.Spec = p.forecast(at.block, r.Step)
			p.forecastRule(r, at.keys, "takes its lookback from forecast.history")
		},
	},
	{
		// scale.replicas is the rule's query; the rule publishes scale
		// signals and raises no alert.
		kind: KindScale, block: "scale",
		noExpr: func(Spec) string {
			return "a scale rule takes its queries from the scale block, not expr: remove expr"
		},
		lookback: DefaultLookback,
		finish: func(p *parser, r *Rule, at ruleNodes) {
			r.Spec = p.scale(at.block)
			p.forecastRule(r, at.keys, "")
		},
		group: (*parser).checkScaleRefs,
	},
	{
		// knee.concurrency and knee.qps are the queries.
		kind: KindKnee, block: "knee",
		read: func(p *parser, n *yaml.Node) Spec { return p.knee(n) },
		noExpr: func(Spec) string {
			return "a knee rule takes its queries from knee.concurrency and knee.qps, not expr"
		},
		lookback: DefaultLookback,
	},
	{
		// expr: the series whose bursts are counted.
		kind: KindSpikiness, block: "spikiness",
		read:     func(p *parser, n *yaml.Node) Spec { return p.spikiness(n) },
		lookback: DefaultLookback,
	},
	{
		// imbalance.a and imbalance.b are the queries, or expr with
		// imbalance.across, the label whose values are compared.
		kind: KindImbalance, block: "imbalance",
		read: func(p *parser, n *yaml.Node) Spec { return p.imbalance(n) },
		noExpr: func(s Spec) string {
			if s.(*Imbalance).Across == "" {
				return "an imbalance rule with a and b takes no expr (or use across: LABEL with expr)"
			}
			return ""
		},
		lookback: DefaultLookback,
	},
}

// formatOf is the entry of kinds of kind k.
func formatOf(k Kind) *kindFormat {
	for i := range kinds {
		if kinds[i].kind == k {
			return &kinds[i]
		}
	}
	panic("rulefmt: kind " + string(k) + " has no entry in kinds")
}
