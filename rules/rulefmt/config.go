// Package rulefmt is the configuration file format: where series come from,
// where findings go, and the groups of rules that say what to watch. It reads
// and checks a file with every problem's file:line:column, expands presets,
// and fills defaults; it evaluates nothing (package rules does).
package rulefmt

import (
	"time"

	"github.com/prometheus/common/config"
)

// Config is one configuration file. The parser (load.go and one file per
// section) reads each key into its field by hand, with the key's position
// for errors; no field is decoded by its name, so the fields carry no
// yaml tags. docs/configuration.md lists the keys.
type Config struct {
	Source Source
	NATS   NATS
	// Alertmanager, when set, forwards alerts to Alertmanagers.
	Alertmanager *Alertmanager
	// Export configures the autoscaler feeds and the gauges.
	Export Export
	// Writeback, when set, writes scores and forecasts back to a store.
	Writeback *Writeback
	Groups    []Group
	// SLOs and Reports are the slos: and reports: sections (reports.go).
	SLOs    []ServiceLevel
	Reports []Report
	// Incidents is the incidents: section (incidents.go).
	Incidents Incidents

	// File is the path the configuration was read from.
	File string
}

// Source is the Prometheus-compatible HTTP API series are read from.
type Source struct {
	// URL is the base URL, e.g. http://127.0.0.1:8428; /api/v1/query_range
	// is appended to it.
	URL string
	// Timeout bounds one HTTP request (default 30s).
	Timeout time.Duration
	// EvaluationDelay is how far behind now the newest evaluated point
	// lies (default 30s: VictoriaMetrics hides the newest 30 s).
	EvaluationDelay time.Duration
	// UsePOST sends queries as POST forms instead of GET.
	UsePOST bool
	// MaxResponseBytes, MaxResponseSeries and MaxResponsePoints bound one
	// answer of the store (0: the defaults, 1 GiB, 200,000 series and 48
	// million points; -1: no bound); an answer past one is refused without
	// being read, with an error naming the bound and the query.
	MaxResponseBytes  int64
	MaxResponseSeries int
	MaxResponsePoints int
	// HTTPClientConfig holds basic auth, bearer token, TLS and headers.
	HTTPClientConfig config.HTTPClientConfig
}

// NATS says where findings are published.
type NATS struct {
	// URL of an external NATS server with JetStream; empty starts an
	// embedded server.
	URL string
	// Subject prefix (default "inferwatch"); findings go to
	// <prefix>.findings.<kind>.
	SubjectPrefix string
	// Stream is the JetStream stream over <prefix>.> (default: the prefix
	// in upper case, e.g. INFERWATCH).
	Stream string
	// StateBucket is the JetStream key-value bucket that keeps alert
	// states and the rules' progress across restarts (default:
	// <stream>_STATE).
	StateBucket string
	// DuplicateWindow is how long JetStream remembers message ids to drop
	// re-published findings (default 24h).
	DuplicateWindow time.Duration
	// Embedded configures the embedded server, used when URL is empty.
	Embedded Embedded
	// Auth is how the daemon authenticates to an external NATS: at most
	// one of a .creds file, an NKey seed file, a token, or a user and
	// password. Secrets may be given in files (token_file,
	// password_file), read at start.
	Auth NATSAuth
	// TLS configures the connection to an external NATS (CA, client
	// certificate), as Prometheus' tls_config.
	TLS *config.TLSConfig
	// StreamMaxAge, StreamMaxBytes and StreamReplicas bound the stream
	// (defaults 14d and 1 GiB when inferwatch creates it, 1 replica; on an
	// existing stream they are applied only when set).
	StreamMaxAge   time.Duration
	StreamMaxBytes int64
	StreamReplicas int
	// OutboxDir keeps findings and alert events on disk, fsynced, until
	// NATS acknowledges them, so a crash, a restart or a broker outage
	// loses none ("none": no outbox). Default: <store_dir>/inferwatch-outbox
	// for an embedded server with a store_dir, none for one with a
	// temporary store, and $XDG_STATE_HOME/inferwatch/outbox/<stream>-<hash
	// of nats.url> for an external server. OutboxMaxBytes bounds it
	// (default 256 MiB).
	OutboxDir      string
	OutboxMaxBytes int64
	// LeaseTTL is how long a replica's heartbeat and its group leases
	// live without being renewed: a replica that stops is replaced
	// after it (default 15s). Heartbeat is how often a replica renews
	// them (default 5s, at most a third of LeaseTTL).
	LeaseTTL  time.Duration
	Heartbeat time.Duration
}

// Defaults of the replicas' leases.
const (
	DefaultLeaseTTL  = 15 * time.Second
	DefaultHeartbeat = 5 * time.Second
)

// NATSAuth is a way of authenticating to NATS.
type NATSAuth struct {
	CredsFile, NKeySeedFile string
	User                    string
	Password, Token         config.Secret
}

// Embedded configures the embedded NATS server.
type Embedded struct {
	// Listen is host:port (default 127.0.0.1:14222; port 0 picks a free
	// one). Beyond loopback it needs User and Password, or Token.
	Listen string
	// StoreDir is the JetStream store directory (default: a new temporary
	// directory, removed at exit).
	StoreDir string
	// User and Password, or Token, are what its clients must present.
	User            string
	Password, Token config.Secret
}

// Group is a set of rules evaluated together on one interval.
type Group struct {
	Name     string
	Interval time.Duration // default 1m
	Rules    []Rule
	// Shards, when 2 or more, splits the group's series into this many
	// shards by the value of the ShardBy label: each shard is evaluated,
	// leased and resumed as a group of its own (see Splits for the rules
	// that run whole instead). 0 or 1: one group.
	Shards  int
	ShardBy []string

	// Pos is where the group starts in the file.
	Pos Pos
}

// Rule is one rule of a group: what it watches (its queries), how (its
// kind and that kind's Spec), and the settings every kind shares.
type Rule struct {
	Name string
	// Kind is what the rule computes; Spec holds the settings of that kind.
	Kind Kind
	Spec Spec
	// Expr is the query whose series the rule watches: an anomaly, decay,
	// spikiness or imbalance-across rule's own, a forecast rule's
	// forecast.expr, a scale rule's scale.replicas; empty for the kinds
	// whose queries are all in their block (correlate, knee, imbalance of
	// a and b). The kinds table (kinds.go) says it kind by kind, with
	// Lookback.
	Expr string
	// Lookback is the window a window kind judges (default 1h); a forecast
	// rule's forecast.history; for an anomaly rule, when set, the window
	// its detector scores each point against and the history its first
	// evaluation fetches (0, the default: the detector's own, see
	// analysis.NeedsOf).
	Lookback time.Duration
	// Step is the resolution of the query (default: the group interval).
	Step time.Duration
	// Labels are added to every finding of the rule.
	Labels map[string]string
	// For is how long a breach must last before it fires (default 0: at
	// the first anomalous point); KeepFiringFor how long a firing alert
	// stays firing after its last anomalous point (default 0);
	// RepeatInterval how often a firing alert is announced again (default
	// 4h; 0: never).
	For, KeepFiringFor, RepeatInterval time.Duration
	// ResolveAfterAbsent resolves an active alert whose series has had no
	// point for this long, counted back from the newest point the rule
	// judged (default: the longest of for plus three steps,
	// keep_firing_for, and DefaultStaleness). ForgetAfter drops the state
	// of a series with no point for this long (default: the longer of
	// resolve_after_absent and twenty steps); a series that comes back
	// later starts afresh, as a new one.
	ResolveAfterAbsent, ForgetAfter time.Duration
	// MinDev is the smallest absolute deviation |value − expected| that
	// counts as anomalous (default 0), so tiny changes on flat series do
	// not page anyone.
	MinDev float64

	// Pos is where the rule starts in the file; SpecPos where its kind's
	// block starts (the rule's own position when it has none, as an
	// anomaly rule with the default detector).
	Pos     Pos
	SpecPos Pos
}

// forgetSteps is how many steps without a point a series' state is kept
// by default, when that is longer than resolve_after_absent.
const forgetSteps = 20

// AbsentAfter is the rule's resolve_after_absent, or its default when the
// rule does not set it: the longest of for plus three steps,
// keep_firing_for, and DefaultStaleness.
func (r Rule) AbsentAfter() time.Duration {
	if r.ResolveAfterAbsent > 0 {
		return r.ResolveAfterAbsent
	}
	return max(r.For+3*r.Step, r.KeepFiringFor, DefaultStaleness)
}

// Forget is the rule's forget_after, or its default when the rule does
// not set it: the longer of AbsentAfter and twenty steps.
func (r Rule) Forget() time.Duration {
	if r.ForgetAfter > 0 {
		return r.ForgetAfter
	}
	return max(r.AbsentAfter(), forgetSteps*r.Step)
}

// Detector is an anomaly rule's detector: its name (default "auto") and its
// parameters as written, e.g. {"k": "3", "min_points": "20"}.
type Detector struct {
	Name   string
	Params map[string]string
}

// Pos is a position in a configuration file.
type Pos struct {
	File         string
	Line, Column int
}

// Correlate configures a correlation rule: the series of X and Y are
// matched by the On labels, Y optionally turned into its jitter (rolling
// standard deviation over YJitter), aligned on the rule's step, and judged
// over the rule's lookback window.
type Correlate struct {
	X, Y string
	// YJitter, when > 0, correlates X with the rolling standard deviation
	// of Y over this window instead of Y itself.
	YJitter time.Duration
	// On lists the labels that match an X series with a Y series (default:
	// every label the two have in common).
	On []string
	// MaxLag is the largest lag, either way, of the lagged
	// cross-correlation (default 0: no lag search).
	MaxLag time.Duration
	// MinAbsR, MaxP and MinPoints are the coupling thresholds: a pair is
	// coupled when n ≥ MinPoints, |Pearson r| ≥ MinAbsR and p < MaxP
	// (defaults 0.5, 0.01, 30).
	MinAbsR, MaxP float64
	MinPoints     int
	// XAbove, when > 0, also asks that X reached this value in the window
	// (e.g. 90 for a saturated GPU), so that the finding says "Y got noisy
	// while X saturated" rather than "the two move together".
	XAbove float64
}

// Decay configures a throughput-decay rule: η = 1 − T/T_peak over the
// lookback window and its Theil–Sen trend.
type Decay struct {
	// Peak is T_peak; 0 estimates it as the PeakQuantile of the window.
	Peak, PeakQuantile float64
	// MinSlope is the least trend of η per day that counts (default 0.1:
	// ten points of the peak per day); MinEta the least current η
	// (default 0.15); Confidence the level of the trend's interval
	// (default 0.95).
	MinSlope, MinEta, Confidence float64
	// Current is the span up to the newest sample whose median η is the
	// current η (default 1h).
	Current time.Duration
}
