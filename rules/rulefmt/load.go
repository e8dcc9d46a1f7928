package rulefmt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/internal/redact"
	"github.com/prometheus/common/config"
	"gopkg.in/yaml.v3"
)

// Defaults filled in by Parse for keys that are absent.
const (
	DefaultTimeout         = 30 * time.Second
	DefaultEvaluationDelay = 30 * time.Second
	DefaultInterval        = time.Minute
	DefaultLookback        = time.Hour
	DefaultDetector        = "auto"
	// DefaultRepeatInterval is how often a firing alert is announced
	// again on its subject, as Alertmanager's repeat_interval.
	DefaultRepeatInterval = 4 * time.Hour
	// DefaultStaleness is the shortest default of resolve_after_absent:
	// Prometheus' staleness, after which a series that stopped is gone
	// from its queries.
	DefaultStaleness = 5 * time.Minute
	// MaxPointsPerQuery bounds lookback/step: a Prometheus-compatible
	// store refuses range queries returning more points per series
	// (Prometheus' limit, which ingest.MaxPointsPerQuery splits queries by).
	MaxPointsPerQuery = 11_000
)

// The expansion budget bounds the mapping entries and list items that
// checking one file may visit, counting each alias and merge key every
// time it is used, so that a small file of nested aliases cannot make
// checking it take unbounded time. A file without aliases visits each of
// its nodes at most once, so the budget grows with the file: minPairs,
// plus pairsPerNode for every node written in it. Checking a file then
// takes time in proportion to its size, which MaxFileSize bounds.
const (
	minPairs     = 200_000
	pairsPerNode = 4
)

var (
	ruleNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_:-]*$`)
	labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	yamlLineRE  = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
)

// MaxFileSize is the largest configuration file Load and Parse accept.
// At its peak, checking a file takes about 30 bytes of memory for every
// byte of it (yaml.v3's nodes, then the rules): 120,000 rules in one
// group are a 14 MB file, checked within 400 MB. 32 MiB leaves room above
// such generated files and bounds what checking any file, the wrong one
// included (a log, a dump), may take at about 1 GB.
const MaxFileSize = 32 << 20

// Load reads and checks the configuration file at path with the zero
// Loader: the file format alone, without the outputs' own checks of their
// sections, which the daemon's loader adds (cmd/inferwatch). On failure
// the error is an Errors value listing every problem with its position.
func Load(path string) (*Config, error) { return Loader{}.Load(path) }

// Parse checks the configuration in data, read from file, with the zero
// Loader: the file format alone (see Loader.Parse).
func Parse(data []byte, file string) (*Config, error) { return Loader{}.Parse(data, file) }

// Load reads and checks the configuration file at path, the output
// sections with l.Outputs. On failure the error is an Errors value listing
// every problem with its position.
func (l Loader) Load(path string) (*Config, error) {
	var es Errors
	f, err := os.Open(path)
	if err != nil {
		es.Add(Pos{File: path}, "", "", "cannot read the configuration: %v", err)
		return nil, es.Err()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileSize {
		es.Add(Pos{File: path, Line: 1, Column: 1}, "", "", "%s", tooLarge(fi.Size()))
		return nil, es.Err()
	}
	// Read one byte more than allowed, to tell a file that grew, or one
	// that is not a regular file, from one that is at the limit.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		es.Add(Pos{File: path}, "", "", "cannot read the configuration: %v", err)
		return nil, es.Err()
	}
	if len(data) > MaxFileSize {
		es.Add(Pos{File: path, Line: 1, Column: 1}, "", "", "%s", tooLarge(-1))
		return nil, es.Err()
	}
	return l.Parse(data, path)
}

// Parse checks the configuration in data, read from file (used in error
// positions and, as in Prometheus, to resolve the relative *_file paths of
// the source's HTTP client configuration). Absent keys get their defaults.
// On failure the error is an Errors value listing every problem with its
// position, group and rule.
func (l Loader) Parse(data []byte, file string) (*Config, error) {
	p := &parser{file: file, outputs: l.Outputs}
	cfg := p.parse(data)
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	if file != "" {
		dir := filepath.Dir(file)
		cfg.Source.HTTPClientConfig.SetDirectory(dir)
		if cfg.Writeback != nil {
			cfg.Writeback.HTTPClientConfig.SetDirectory(dir)
		}
		if cfg.Alertmanager != nil {
			cfg.Alertmanager.HTTPClientConfig.SetDirectory(dir)
		}
	}
	return cfg, nil
}

// tooLarge says that a file of size bytes (-1: unknown, but more than
// MaxFileSize) is too large.
func tooLarge(size int64) string {
	if size < 0 {
		return fmt.Sprintf("the configuration is larger than %s, the most a configuration file may be; is it the right file?", fmtSize(MaxFileSize))
	}
	return fmt.Sprintf("the configuration is %s, more than the %s a configuration file may be; is it the right file?", fmtSize(size), fmtSize(MaxFileSize))
}

// fmtSize formats a size in bytes as 32 MiB or 40.5 MiB (42467328 bytes).
func fmtSize(n int64) string {
	const mib = 1 << 20
	if n%mib == 0 {
		return fmt.Sprintf("%d MiB", n/mib)
	}
	return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/mib, n)
}

type parser struct {
	file    string
	outputs OutputChecks
	errs    Errors
	// group and rule are the names errors are attributed to.
	group, rule string
	// budget is what is left of the expansion budget, limit all of it.
	budget, limit int
	exhausted     bool
	// stopAt is how many errors were found when the budget ran out; the
	// ones found after, in entries left unread, are dropped.
	stopAt int
	// origin is the merge key being expanded, where running out of budget
	// is reported.
	origin *yaml.Node
	// changeLabels are the incidents' change labels, for the diagnoses'
	// conditions on them.
	changeLabels []string
}

type pair struct{ k, v *yaml.Node }

func (p *parser) pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: p.file}
	}
	return Pos{File: p.file, Line: n.Line, Column: n.Column}
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	p.errs.Add(p.pos(n), p.group, p.rule, format, args...)
}

func (p *parser) at(line, col int) Pos {
	return Pos{File: p.file, Line: line, Column: col}
}

func (p *parser) parse(data []byte) *Config {
	if len(data) > MaxFileSize {
		p.errs.Add(p.at(1, 1), "", "", "%s", tooLarge(int64(len(data))))
		return nil
	}
	if pr, bad := checkText(data); bad {
		p.errs.Add(p.at(pr.line, pr.col), "", "", "%s", pr.msg)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			what := "the configuration is empty"
			if bytes.Contains(data, []byte("#")) {
				what += " (it holds only comments)"
			}
			p.errs.Add(p.at(1, 1), "", "", "%s; it needs at least source.url and one group", what)
		} else {
			p.syntaxError(data, err)
		}
		return nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		p.errorf(&next, "only one YAML document is allowed; remove the second one (after ---)")
	} else if !errors.Is(err, io.EOF) {
		p.syntaxError(data, err)
	}
	if len(doc.Content) == 0 {
		p.errs.Add(p.at(1, 1), "", "", "the configuration is empty; it needs at least source.url and one group")
		return nil
	}
	p.limit = minPairs + pairsPerNode*countNodes(&doc)
	p.budget = p.limit
	root := resolve(doc.Content[0])
	if isNull(root) && root.Value == "" { // nothing after ---
		p.errs.Add(p.at(1, 1), "", "", "the configuration is empty; it needs at least source.url and one group")
		return nil
	}
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "the top level must be a mapping with source, nats and groups, got %s", kind(root))
		return nil
	}
	cfg := &Config{File: p.file}
	f := p.fields(root, "the top level", []string{"source", "nats", "alertmanager", "export", "writeback", "groups", "slos", "reports", "incidents"}, nil)
	cfg.Source = p.source(f["source"], root)
	if e, ok := f["alertmanager"]; ok {
		cfg.Alertmanager = p.alertmanager(e)
	}
	cfg.NATS = p.nats(f["nats"])
	cfg.Export = p.export(f["export"])
	cfg.Groups = p.groups(f["groups"], root)
	if e, ok := f["writeback"]; ok {
		cfg.Writeback = p.writeback(e, cfg.Groups)
	}
	cfg.SLOs = p.slos(f["slos"])
	cfg.Reports = p.reports(f["reports"], cfg.SLOs)
	cfg.Incidents = p.incidents(f["incidents"], cfg.Groups)
	if p.exhausted {
		p.errs = p.errs[:p.stopAt]
	}
	return cfg
}

// syntaxError reports err, yaml.v3's syntax error in data, where the
// mistake is: yaml.v3 gives one line, often that of the enclosing block,
// and no column, so the text is read again to find it (see syntax.go).
func (p *parser) syntaxError(data []byte, err error) {
	pr := findSyntaxError(data, err)
	p.errs.Add(p.at(pr.line, pr.col), "", "", "%s", pr.msg)
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

// pairs lists the entries of mapping n with merge keys (<<) expanded,
// reporting keys that are not scalars or are given twice.
func (p *parser) pairs(n *yaml.Node, where string) []pair {
	return p.pairsDepth(n, where, 0, true)
}

func (p *parser) pairsDepth(n *yaml.Node, where string, depth int, report bool) []pair {
	if depth > 8 {
		if report {
			p.errorf(n, "%s: merge keys (<<) are nested too deeply", where)
		}
		return nil
	}
	var out []pair
	seen := map[string]*yaml.Node{}
	var merges []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !p.spend(n) {
			return out
		}
		if isMerge(k) {
			merges = append(merges, pair{k, v})
			continue
		}
		if k.Kind != yaml.ScalarNode {
			if report {
				p.errorf(k, "%s: keys must be plain names, got %s", where, kind(k))
			}
			continue
		}
		if first, dup := seen[k.Value]; dup {
			if report {
				p.errorf(k, "%s: %q is given twice (first at line %d)", where, k.Value, first.Line)
			}
			continue
		}
		seen[k.Value] = k
		out = append(out, pair{k, v})
	}
	for _, mkv := range merges {
		if depth == 0 {
			p.origin = mkv.k
		}
		m := resolve(mkv.v)
		var srcs []*yaml.Node
		switch m.Kind {
		case yaml.MappingNode:
			srcs = []*yaml.Node{m}
		case yaml.SequenceNode:
			for _, c := range m.Content {
				srcs = append(srcs, resolve(c))
			}
		default:
			srcs = []*yaml.Node{m}
		}
		for _, src := range srcs {
			if src.Kind != yaml.MappingNode {
				if report {
					p.errorf(m, "%s: a merge key (<<) needs a mapping or a list of mappings, got %s", where, kind(src))
				}
				continue
			}
			for _, kv := range p.pairsDepth(src, where, depth+1, false) {
				if _, dup := seen[kv.k.Value]; !dup {
					seen[kv.k.Value] = kv.k
					out = append(out, kv)
				}
			}
		}
	}
	if depth == 0 {
		p.origin = nil
	}
	return out
}

// spend takes one unit of the expansion budget, reporting once when it
// runs out: at the merge key being expanded, if any, or else at the node
// being read.
func (p *parser) spend(at *yaml.Node) bool {
	if p.budget > 0 {
		p.budget--
		return true
	}
	if !p.exhausted {
		p.exhausted = true
		if p.origin != nil {
			at = p.origin
		}
		p.errorf(at, "aliases and merge keys expand the configuration to more than %d entries, the most a file of its size may expand to (are aliases nested into an alias bomb?); checking stopped here", p.limit)
		p.stopAt = len(p.errs)
	}
	return false
}

// countNodes counts the nodes written in the document n, not following
// aliases.
func countNodes(n *yaml.Node) int {
	count := 0
	stack := []*yaml.Node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		count++
		stack = append(stack, n.Content...)
	}
	return count
}

// fields returns the entries of mapping n whose keys are known, by key.
// Other keys are passed to other when it is not nil, and are reported as
// unknown when other is nil or returns false.
func (p *parser) fields(n *yaml.Node, where string, known []string, other func(pair) bool, more ...string) map[string]pair {
	out := map[string]pair{}
	for _, kv := range p.pairs(n, where) {
		if slices.Contains(known, kv.k.Value) {
			out[kv.k.Value] = kv
			continue
		}
		if other != nil && other(kv) {
			continue
		}
		p.unknown(kv.k, where, append(append([]string(nil), known...), more...))
	}
	return out
}

func (p *parser) unknown(k *yaml.Node, where string, known []string) {
	if s := suggest(k.Value, known); s != "" {
		p.errorf(k, "unknown field %q in %s; did you mean %q?", k.Value, where, s)
		return
	}
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	p.errorf(k, "unknown field %q in %s; known fields: %s", k.Value, where, strings.Join(sorted, ", "))
}

// suggest returns the known name closest to s when it is a likely typo.
func suggest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(s, k); d < bestD || (d == bestD && best != "" && k < best) {
			best, bestD = k, d
		}
	}
	if bestD > len(s)/3+1 {
		return ""
	}
	return best
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of neighbouring letters.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// str reads a scalar as a string; null reads as "".
func (p *parser) str(v *yaml.Node, name string) (string, bool) {
	v = resolve(v)
	if v.Kind != yaml.ScalarNode {
		p.errorf(v, "%s must be a string, got %s", name, kind(v))
		return "", false
	}
	if isNull(v) {
		return "", true
	}
	return v.Value, true
}

func (p *parser) boolean(v *yaml.Node, name string) (bool, bool) {
	v = resolve(v)
	var b bool
	if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
		p.errorf(v, "%s must be true or false, got %s", name, kind(v))
		return false, false
	}
	return b, true
}

// duration reads a MetricsQL duration such as 30s, 1h30m, 1d or 1w.
func (p *parser) duration(v *yaml.Node, name string) (time.Duration, bool) {
	v = resolve(v)
	if v.Kind != yaml.ScalarNode || isNull(v) {
		p.errorf(v, "%s must be a duration such as 30s, 5m, 1h30m or 1d, got %s", name, kind(v))
		return 0, false
	}
	d, err := parseDuration(v.Value)
	if err != nil {
		p.errorf(v, "%s: %v", name, err)
		return 0, false
	}
	return d, true
}

// parseDuration parses s in the syntax of VictoriaMetrics'
// lib/promutil.Duration (MetricsQL durations: ms, s, m, h, d, w, y and
// their sums, e.g. 1h30m), except that a bare number, which MetricsQL
// reads as seconds, is refused as ambiguous, and so is the step-relative
// unit i, which has no meaning outside a query.
func parseDuration(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 0, errors.New("empty duration; write e.g. 30s, 5m or 1h")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("%q has no unit; write e.g. %ss, %sm or %sh", s, s, s, s)
	}
	ms, err := metricsql.DurationValue(s, 0)
	if err != nil { // its message repeats s and adds nothing
		return 0, fmt.Errorf("%q is not a duration; write e.g. 30s, 5m, 1h30m, 1d or 1w", s)
	}
	if strings.ContainsAny(s, "iI") {
		return 0, fmt.Errorf("cannot use duration %q: the step-relative unit i has no meaning here", s)
	}
	const maxMS = math.MaxInt64 / int64(time.Millisecond)
	if ms > maxMS || ms < -maxMS {
		return 0, fmt.Errorf("duration %q is too large", s)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// positive reads an optional duration that must be > 0 (or ≥ 0 when
// zeroOK), keeping def when the key is absent or wrong. ok is false when
// the key is present and wrong.
func (p *parser) positive(kv pair, present bool, name string, def time.Duration, zeroOK bool) (time.Duration, bool) {
	if !present {
		return def, true
	}
	d, ok := p.duration(kv.v, name)
	if !ok {
		return def, false
	}
	switch {
	case zeroOK && d < 0:
		p.errorf(resolve(kv.v), "%s must be 0 or greater, got %s", name, dur.Format(d))
		return def, false
	case !zeroOK && d <= 0:
		p.errorf(resolve(kv.v), "%s must be greater than 0, got %s", name, dur.Format(d))
		return def, false
	}
	return d, true
}

var sourceKeys = []string{"url", "timeout", "evaluation_delay", "use_post", "max_response_bytes", "max_response_series", "max_response_points"}

// fieldsWithHTTP reads the fields of mapping n: the known ones, and any
// field of Prometheus' HTTP client configuration (basic_auth,
// authorization, tls_config, …), decoded strictly into hc.
func (p *parser) fieldsWithHTTP(n *yaml.Node, where string, known []string, hc *config.HTTPClientConfig) map[string]pair {
	hcFields, _ := structFields(reflect.TypeFor[config.HTTPClientConfig]())
	hv := reflect.ValueOf(hc).Elem()
	httpKeys := make([]string, 0, len(hcFields))
	for k := range hcFields {
		httpKeys = append(httpKeys, k)
	}
	return p.fields(n, where, known, func(e pair) bool {
		fi, ok := hcFields[e.k.Value]
		if !ok {
			return false
		}
		name := where + "." + e.k.Value
		before := len(p.errs)
		p.strict(e.v, fi.typ, name, 0)
		if len(p.errs) > before {
			return true
		}
		if err := e.v.Decode(hv.FieldByIndex(fi.index).Addr().Interface()); err != nil {
			p.errorf(resolve(e.v), "%s: %s", name, yamlErrMsg(err))
		}
		return true
	}, httpKeys...)
}

func (p *parser) source(kv pair, parent *yaml.Node) Source {
	s := Source{
		Timeout:          DefaultTimeout,
		EvaluationDelay:  DefaultEvaluationDelay,
		HTTPClientConfig: config.DefaultHTTPClientConfig,
	}
	if kv.v == nil {
		p.errorf(parent, "source is required: add source: {url: http://127.0.0.1:8428}")
		return s
	}
	n := resolve(kv.v)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "source must be a mapping with at least url, got %s", kind(n))
		return s
	}
	f := p.fieldsWithHTTP(n, "source", sourceKeys, &s.HTTPClientConfig)

	if e, ok := f["url"]; ok {
		s.URL, _ = p.str(e.v, "source.url")
		if s.URL != "" {
			p.checkSourceURL(resolve(e.v), s.URL)
		} else {
			p.errorf(resolve(e.v), "source.url must not be empty; write e.g. http://127.0.0.1:8428")
		}
	} else {
		p.errorf(n, "source.url is required, e.g. url: http://127.0.0.1:8428")
	}
	e, ok := f["timeout"]
	s.Timeout, _ = p.positive(e, ok, "source.timeout", DefaultTimeout, false)
	e, ok = f["evaluation_delay"]
	s.EvaluationDelay, _ = p.positive(e, ok, "source.evaluation_delay", DefaultEvaluationDelay, true)
	if e, ok := f["max_response_bytes"]; ok {
		s.MaxResponseBytes = int64(p.integer(e, "source.max_response_bytes", 0, -1, 1<<50))
	}
	if e, ok := f["max_response_series"]; ok {
		s.MaxResponseSeries = int(p.integer(e, "source.max_response_series", 0, -1, 1<<40))
	}
	if e, ok := f["max_response_points"]; ok {
		s.MaxResponsePoints = int(p.integer(e, "source.max_response_points", 0, -1, 1<<50))
	}
	if e, ok := f["use_post"]; ok {
		s.UsePOST, _ = p.boolean(e.v, "source.use_post")
	}
	if err := s.HTTPClientConfig.Validate(); err != nil {
		p.errorf(n, "source: %v", err)
	}
	return s
}

func (p *parser) checkSourceURL(n *yaml.Node, raw string) {
	if err := CheckSourceURL(raw); err != nil {
		p.errorf(n, "%v", err)
	}
}

// CheckSourceURL says what is wrong with raw as source.url (the
// --source.url flag goes through it too), with any secret in it hidden.
func CheckSourceURL(raw string) error {
	u, err := url.Parse(raw)
	shown := redact.URL(raw)
	switch {
	case err != nil:
		return fmt.Errorf("source.url %q is not a URL: %s", shown, redact.Text(err.Error(), raw))
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("source.url %q must be an absolute http:// or https:// URL, e.g. http://127.0.0.1:8428", shown)
	case u.Host == "":
		return fmt.Errorf("source.url %q has no host", shown)
	case u.User != nil:
		return errors.New("source.url must not hold credentials; use basic_auth or authorization")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Errorf("source.url %q must not have a query or fragment: /api/v1/query_range is appended to it", shown)
	}
	return nil
}

// The defaults of the nats section, and how the stream and the state
// bucket are named when it names none: package alerting/natsjs's own
// (TestFileDefaultsAreTheOutputs in cmd/inferwatch keeps them equal).
const (
	// DefaultSubjectPrefix is the first token of every subject.
	DefaultSubjectPrefix = "inferwatch"
	// DefaultDuplicateWindow is how long JetStream remembers message ids.
	DefaultDuplicateWindow = 24 * time.Hour
	// DefaultEmbeddedListen is where the embedded server listens: not
	// NATS' standard 4222, which a NATS server already on the host holds.
	DefaultEmbeddedListen = "127.0.0.1:14222"
)

// streamName is the stream of a subject prefix when nats.stream is not
// set: the prefix upper-cased with '.' and '-' turned into '_'.
func streamName(prefix string) string {
	return strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(prefix))
}

// stateBucket is the state bucket of a stream when nats.state_bucket is
// not set: <stream>_STATE.
func stateBucket(stream string) string { return stream + "_STATE" }

// isLoopback reports whether host (a name or an address) is only
// reachable from this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (p *parser) nats(kv pair) NATS {
	out := NATS{
		SubjectPrefix:   DefaultSubjectPrefix,
		DuplicateWindow: DefaultDuplicateWindow,
		Embedded:        Embedded{Listen: DefaultEmbeddedListen},
		LeaseTTL:        DefaultLeaseTTL,
		Heartbeat:       DefaultHeartbeat,
	}
	var prefixNode, streamNode *yaml.Node
	if kv.v != nil && !isNull(resolve(kv.v)) {
		n := resolve(kv.v)
		if n.Kind != yaml.MappingNode {
			p.errorf(n, "nats must be a mapping, got %s", kind(n))
		} else {
			f := p.fields(n, "nats", []string{"url", "subject_prefix", "stream", "state_bucket", "duplicate_window", "embedded",
				"user", "password", "password_file", "token", "token_file", "nkey_seed_file", "creds_file", "tls",
				"stream_max_age", "stream_max_bytes", "stream_replicas", "outbox_dir", "outbox_max_bytes",
				"lease_ttl", "heartbeat"}, nil)
			if e, ok := f["outbox_dir"]; ok {
				out.OutboxDir, _ = p.str(e.v, "nats.outbox_dir")
				if out.OutboxDir != "" && out.OutboxDir != "none" && !filepath.IsAbs(out.OutboxDir) && p.file != "" {
					out.OutboxDir = filepath.Join(filepath.Dir(p.file), out.OutboxDir)
				}
			}
			if e, ok := f["outbox_max_bytes"]; ok {
				out.OutboxMaxBytes = int64(p.integer(e, "nats.outbox_max_bytes", 0, 1<<20, 1<<50))
			}
			out.Auth = p.natsAuth(n, f, "nats")
			if e, ok := f["tls"]; ok {
				out.TLS = &config.TLSConfig{}
				before := len(p.errs)
				p.strict(e.v, reflect.TypeFor[config.TLSConfig](), "nats.tls", 0)
				if len(p.errs) == before {
					if err := e.v.Decode(out.TLS); err != nil {
						p.errorf(resolve(e.v), "nats.tls: %s", yamlErrMsg(err))
					} else {
						out.TLS.SetDirectory(filepath.Dir(p.file))
						if _, err := config.NewTLSConfig(out.TLS); err != nil {
							p.errorf(resolve(e.v), "nats.tls: %v", err)
						}
					}
				}
			}
			if e, ok := f["stream_max_age"]; ok {
				out.StreamMaxAge, _ = p.positive(e, true, "nats.stream_max_age", 0, false)
			}
			if e, ok := f["stream_max_bytes"]; ok {
				out.StreamMaxBytes = int64(p.integer(e, "nats.stream_max_bytes", 0, 1<<20, 1<<50))
			}
			if e, ok := f["stream_replicas"]; ok {
				out.StreamReplicas = int(p.integer(e, "nats.stream_replicas", 0, 1, 5))
			}
			if e, ok := f["state_bucket"]; ok {
				out.StateBucket, _ = p.str(e.v, "nats.state_bucket")
				if msg := checkStream(out.StateBucket); msg != "" && out.StateBucket != "" {
					p.errorf(resolve(e.v), "nats.state_bucket %q %s", out.StateBucket, msg)
				}
			}
			if e, ok := f["url"]; ok {
				out.URL, _ = p.str(e.v, "nats.url")
				if out.URL != "" {
					p.checkNATSURL(resolve(e.v), out.URL)
				}
			}
			if e, ok := f["subject_prefix"]; ok {
				prefixNode = resolve(e.v)
				if s, _ := p.str(e.v, "nats.subject_prefix"); s != "" {
					out.SubjectPrefix = s
				}
			}
			if e, ok := f["stream"]; ok {
				streamNode = resolve(e.v)
				out.Stream, _ = p.str(e.v, "nats.stream")
			}
			e, ok := f["duplicate_window"]
			out.DuplicateWindow, _ = p.positive(e, ok, "nats.duplicate_window", DefaultDuplicateWindow, false)
			if e, ok := f["embedded"]; ok {
				out.Embedded = p.embedded(e.v)
			}
			e, ttlSet := f["lease_ttl"]
			ttl, ttlOK := p.positive(e, ttlSet, "nats.lease_ttl", DefaultLeaseTTL, false)
			if ttlOK && ttl < time.Second {
				p.errorf(resolve(e.v), "nats.lease_ttl must be at least 1s, got %s", dur.Format(ttl))
				ttlOK = false
			}
			out.LeaseTTL = ttl
			hb, hbSet := f["heartbeat"]
			def := DefaultHeartbeat
			if ttlSet && !hbSet {
				def = min(def, ttl/3)
			}
			out.Heartbeat, ok = p.positive(hb, hbSet, "nats.heartbeat", def, false)
			if ok && ttlOK && out.Heartbeat > out.LeaseTTL/3 {
				at := resolve(e.v)
				if hbSet {
					at = resolve(hb.v)
				}
				p.errorf(at, "nats.heartbeat %s is more than a third of nats.lease_ttl %s: a lease must be renewable twice before it expires",
					dur.Format(out.Heartbeat), dur.Format(out.LeaseTTL))
			}
		}
	}
	prefixOK := true
	if msg := checkSubjectPrefix(out.SubjectPrefix); msg != "" {
		p.errorf(prefixNode, "nats.subject_prefix %q %s", out.SubjectPrefix, msg)
		prefixOK = false
	}
	if out.Stream == "" {
		out.Stream = streamName(out.SubjectPrefix)
		if msg := checkStream(out.Stream); msg != "" && prefixOK {
			p.errorf(prefixNode, "the stream name %q made from nats.subject_prefix %s; set nats.stream", out.Stream, msg)
		}
	} else if msg := checkStream(out.Stream); msg != "" {
		p.errorf(streamNode, "nats.stream %q %s", out.Stream, msg)
	}
	if out.StateBucket == "" {
		out.StateBucket = stateBucket(out.Stream)
	}
	return out
}

func (p *parser) checkNATSURL(n *yaml.Node, raw string) {
	for _, err := range CheckNATSURL(raw) {
		p.errorf(n, "%v", err)
	}
}

// CheckNATSURL says what is wrong with raw as nats.url (a comma-separated
// list; the --nats.url flag goes through it too), with any secret in it
// hidden. Credentials in the URL are allowed, as nats.go takes them, but
// a user, password or token is better kept in the nats section's fields.
func CheckNATSURL(raw string) []error {
	var errs []error
	for part := range strings.SplitSeq(raw, ",") {
		part = strings.TrimSpace(part)
		shown := redact.URL(part)
		if part == "" {
			errs = append(errs, fmt.Errorf("nats.url %q has an empty entry in its comma-separated list", redact.URL(raw)))
			continue
		}
		u, err := url.Parse(part)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("nats.url %q is not a URL: %s", shown, redact.Text(err.Error(), part)))
		case u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss":
			errs = append(errs, fmt.Errorf("nats.url %q must start with nats://, tls://, ws:// or wss://", shown))
		case u.Host == "":
			errs = append(errs, fmt.Errorf("nats.url %q has no host", shown))
		}
	}
	return errs
}

// checkSubjectPrefix returns why s is not a valid NATS subject prefix, or
// "" when it is.
func checkSubjectPrefix(s string) string {
	for tok := range strings.SplitSeq(s, ".") {
		switch {
		case tok == "":
			return "has an empty token; write tokens separated by single dots, e.g. inferwatch.prod"
		case strings.ContainsAny(tok, "*>"):
			return "must not contain the wildcards * or >"
		case strings.IndexFunc(tok, isSpaceOrControl) >= 0:
			return "must not contain spaces or control characters"
		}
	}
	return ""
}

// checkStream returns why s is not a valid JetStream stream name, or "".
func checkStream(s string) string {
	switch {
	case strings.ContainsAny(s, ".*>/\\"):
		return `must not contain ".", "*", ">", "/" or "\"`
	case strings.IndexFunc(s, isSpaceOrControl) >= 0:
		return "must not contain spaces or control characters"
	case len(s) > 255:
		return "is longer than 255 bytes"
	}
	return ""
}

func isSpaceOrControl(r rune) bool {
	return r <= ' ' || r == 0x7f || r == 0x85 || r == 0xa0 || r == 0x2028 || r == 0x2029 || (r >= 0x2000 && r <= 0x200b) || r == 0x3000 || r == 0xfeff
}

func (p *parser) embedded(v *yaml.Node) Embedded {
	out := Embedded{Listen: DefaultEmbeddedListen}
	n := resolve(v)
	if isNull(n) {
		return out
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "nats.embedded must be a mapping, got %s", kind(n))
		return out
	}
	f := p.fields(n, "nats.embedded", []string{"listen", "store_dir", "user", "password", "password_file", "token", "token_file"}, nil)
	a := p.natsAuth(n, f, "nats.embedded")
	out.User, out.Password, out.Token = a.User, a.Password, a.Token
	if e, ok := f["listen"]; ok {
		if s, ok := p.str(e.v, "nats.embedded.listen"); ok && s != "" {
			if msg := checkHostPort(s); msg != "" {
				p.errorf(resolve(e.v), "nats.embedded.listen %q %s", s, msg)
			} else {
				out.Listen = s
			}
		}
	}
	if e, ok := f["store_dir"]; ok {
		out.StoreDir, _ = p.str(e.v, "nats.embedded.store_dir")
	}
	if host, _, err := net.SplitHostPort(out.Listen); err == nil && !isLoopback(host) && host != "" &&
		out.Token == "" && (out.User == "" || out.Password == "") {
		p.errorf(n, "nats.embedded.listen %q is beyond loopback: anyone who reaches it could publish forged findings; set nats.embedded.user and password (or token), or listen on 127.0.0.1", out.Listen)
	}
	return out
}

// natsAuth reads the credential keys of a nats section: a secret inline
// or in a file (read now, relative to the configuration's directory), at
// most one way of authenticating.
func (p *parser) natsAuth(n *yaml.Node, f map[string]pair, where string) NATSAuth {
	var a NATSAuth
	var ways []string
	secret := func(key, fileKey string) config.Secret {
		e, inline := f[key]
		fe, inFile := f[fileKey]
		switch {
		case inline && inFile:
			p.errorf(resolve(fe.k), "%s: give %s or %s, not both", where, key, fileKey)
		case inline:
			s, _ := p.str(e.v, where+"."+key)
			return config.Secret(s)
		case inFile:
			name, _ := p.str(fe.v, where+"."+fileKey)
			path := name
			if !filepath.IsAbs(path) && p.file != "" {
				path = filepath.Join(filepath.Dir(p.file), path)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				p.errorf(resolve(fe.v), "%s.%s: cannot read %s: %v", where, fileKey, name, err)
				return ""
			}
			return config.Secret(strings.TrimSpace(string(b)))
		}
		return ""
	}
	if e, ok := f["user"]; ok {
		a.User, _ = p.str(e.v, where+".user")
	}
	a.Password = secret("password", "password_file")
	a.Token = secret("token", "token_file")
	for _, key := range []string{"creds_file", "nkey_seed_file"} {
		if e, ok := f[key]; ok {
			v, _ := p.str(e.v, where+"."+key)
			if v != "" && !filepath.IsAbs(v) && p.file != "" {
				v = filepath.Join(filepath.Dir(p.file), v)
			}
			if _, err := os.Stat(v); err != nil {
				p.errorf(resolve(e.v), "%s.%s: %v", where, key, err)
			}
			if key == "creds_file" {
				a.CredsFile = v
			} else {
				a.NKeySeedFile = v
			}
			ways = append(ways, key)
		}
	}
	if a.Token != "" {
		ways = append(ways, "token")
	}
	if a.User != "" || a.Password != "" {
		ways = append(ways, "user and password")
		if a.User == "" || a.Password == "" {
			p.errorf(n, "%s: a user needs a password, and a password a user", where)
		}
	}
	if len(ways) > 1 {
		p.errorf(n, "%s: authenticate one way, not with %s", where, strings.Join(ways, " and "))
	}
	return a
}

func checkHostPort(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "is not host:port, e.g. 127.0.0.1:14222 (port 0 picks a free one)"
	}
	if strings.IndexFunc(host, isSpaceOrControl) >= 0 {
		return "has spaces in its host"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || strings.HasPrefix(port, "+") {
		return "has no port number from 0 to 65535"
	}
	return ""
}

func (p *parser) groups(kv pair, root *yaml.Node) []Group {
	if kv.v == nil {
		p.errorf(root, "groups is required: at least one group with at least one rule")
		return nil
	}
	n := resolve(kv.v)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "groups must be a list of groups, got %s", kind(n))
		return nil
	}
	if len(n.Content) == 0 {
		p.errorf(n, "groups must hold at least one group")
		return nil
	}
	out := make([]Group, 0, len(n.Content))
	names := map[string]int{}
	for _, item := range n.Content {
		if !p.spend(item) {
			break
		}
		g, ok := p.group1(resolve(item), names)
		if ok {
			out = append(out, g)
		}
	}
	p.group, p.rule = "", ""
	return out
}

// peekName returns the scalar value of a mapping's name key, if any, so
// errors found before it can already name their group or rule.
func peekName(n *yaml.Node) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "name" {
			if v := resolve(n.Content[i+1]); v.Kind == yaml.ScalarNode && !isNull(v) {
				return v.Value
			}
		}
	}
	return ""
}

func (p *parser) group1(n *yaml.Node, names map[string]int) (Group, bool) {
	p.group, p.rule = "", ""
	g := Group{Interval: DefaultInterval, Pos: p.pos(n)}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "a group must be a mapping with name, interval and rules, got %s", kind(n))
		return g, false
	}
	p.group = peekName(n)
	f := p.fields(n, "group", []string{"name", "interval", "rules", "preset", "selector", "by", "sensitivity", "shards", "shard_by"}, nil)
	if e, ok := f["name"]; ok {
		g.Name, _ = p.str(e.v, "name")
		if strings.ContainsAny(g.Name, ".*>") || strings.IndexFunc(g.Name, isSpaceOrControl) >= 0 {
			p.errorf(resolve(e.v), "group name %q must not contain '.', '*', '>', white space or control characters: it is a token of the NATS subjects of its alerts (<prefix>.alerts.<group>.<rule>)", g.Name)
		} else if g.Name != "" {
			if line, dup := names[g.Name]; dup {
				p.errorf(resolve(e.v), "duplicate group name %q; the first is at line %d", g.Name, line)
			} else {
				names[g.Name] = resolve(e.v).Line
			}
		}
	}
	if g.Name == "" {
		p.errorf(n, "a group needs a name")
	}
	e, ok := f["interval"]
	var intervalOK bool
	g.Interval, intervalOK = p.positive(e, ok, "interval", DefaultInterval, false)
	p.groupShards(&g, f)
	presetRules, hasPreset := p.presetKeys(f)
	if e, ok := f["sensitivity"]; ok {
		p.presetSensitivity(e, hasPreset, presetRules)
	}
	e, ok = f["rules"]
	if hasPreset && (!ok || isNull(resolve(e.v)) || (resolve(e.v).Kind == yaml.SequenceNode && len(resolve(e.v).Content) == 0)) {
		g.Rules = presetRules
		p.checkShards(g)
		return g, true
	}
	if !ok {
		p.errorf(n, "a group needs rules: at least one rule (or a preset)")
		return g, true
	}
	rn := resolve(e.v)
	if rn.Kind != yaml.SequenceNode {
		p.errorf(rn, "rules must be a list of rules, got %s", kind(rn))
		return g, true
	}
	if len(rn.Content) == 0 {
		p.errorf(rn, "rules must hold at least one rule")
		return g, true
	}
	ruleNames := map[string]int{}
	g.Rules = make([]Rule, 0, len(rn.Content))
	for _, item := range rn.Content {
		if !p.spend(item) {
			break
		}
		r, ok := p.rule1(resolve(item), g.Interval, intervalOK, ruleNames)
		if ok {
			g.Rules = append(g.Rules, r)
		}
	}
	if hasPreset {
		g.Rules = mergePresetRules(presetRules, g.Rules)
	}
	for _, k := range kinds {
		if k.group != nil {
			k.group(p, g.Rules, g.Interval)
		}
	}
	p.rule = ""
	p.checkShards(g)
	return g, true
}

// Sensitivities are the values of a preset's sensitivity, as the auto
// detector's sensitivity parameter takes them.
var Sensitivities = []string{"low", "medium", "high"}

// presetSensitivity sets the sensitivity of the preset's anomaly rules
// that use auto.
func (p *parser) presetSensitivity(e pair, hasPreset bool, rules []Rule) {
	v := resolve(e.v)
	s, ok := p.str(v, "sensitivity")
	switch {
	case !ok:
	case !hasPreset:
		p.errorf(resolve(e.k), "sensitivity sets the detector of a preset's rules, and this group has no preset; on a rule of your own write it in the detector: detector: {name: auto, sensitivity: %s}", s)
	case !slices.Contains(Sensitivities, s):
		p.errorf(v, "sensitivity must be low, medium or high, got %q", s)
	default:
		for i := range rules {
			if d, ok := rules[i].Spec.(*Detector); ok && d.Name == DefaultDetector {
				d.Params = map[string]string{"sensitivity": s}
			}
		}
	}
}

var ruleKeys = func() []string {
	keys := []string{"name", "expr", "lookback", "step", "for", "keep_firing_for", "repeat_interval", "resolve_after_absent",
		"forget_after", "min_dev", "labels"}
	for _, k := range kinds {
		keys = append(keys, k.block)
	}
	return keys
}()

func (p *parser) rule1(n *yaml.Node, interval time.Duration, intervalOK bool, names map[string]int) (Rule, bool) {
	p.rule = ""
	r := Rule{Kind: noBlockKind, Step: interval, Pos: p.pos(n)}
	r.SpecPos = r.Pos
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "a rule must be a mapping with name, expr and detector, got %s", kind(n))
		return r, false
	}
	p.rule = peekName(n)
	f := p.fields(n, "rule", ruleKeys, nil)
	if e, ok := f["name"]; ok {
		r.Name, _ = p.str(e.v, "name")
		v := resolve(e.v)
		switch {
		case r.Name == "":
		case strings.Contains(r.Name, "."):
			p.errorf(v, "rule name %q must not contain '.': it ends the NATS subjects of the rule's events (<prefix>.alerts.<group>.<rule>); use '_', '-' or ':' instead", r.Name)
		case !ruleNameRE.MatchString(r.Name):
			p.errorf(v, "rule name %q must match %s", r.Name, ruleNameRE)
		default:
			if line, dup := names[r.Name]; dup {
				p.errorf(v, "duplicate rule name %q in this group; the first is at line %d", r.Name, line)
			} else {
				names[r.Name] = v.Line
			}
		}
	}
	if r.Name == "" {
		p.errorf(n, "a rule needs a name")
	}
	// The kind: the block present, at most one.
	var block pair
	var blocks []pair
	for _, k := range kinds {
		if kv, ok := f[k.block]; ok {
			if len(blocks) == 0 {
				r.Kind, block = k.kind, kv
			}
			blocks = append(blocks, kv)
		}
	}
	kf := formatOf(r.Kind)
	if len(blocks) > 1 {
		p.errorf(resolve(blocks[1].k), "a rule computes one thing: it has %s and %s; split it into two rules", blocks[0].k.Value, blocks[1].k.Value)
	}
	if block.v != nil {
		r.SpecPos = p.pos(resolve(block.v))
	}
	if kf.read != nil {
		r.Spec = kf.read(p, resolve(block.v))
	}
	// Rules whose queries are all in their block take no expr.
	ownQueries := ""
	if kf.noExpr != nil {
		ownQueries = kf.noExpr(r.Spec)
	}
	if e, ok := f["expr"]; ok {
		if ownQueries != "" {
			p.errorf(resolve(e.k), "%s", ownQueries)
		}
		r.Expr, _ = p.str(e.v, "expr")
		if strings.TrimSpace(r.Expr) == "" {
			p.errorf(resolve(e.v), "expr must not be empty")
		} else if _, err := metricsql.Parse(r.Expr); err != nil {
			p.errorf(resolve(e.v), "expr %q is not valid MetricsQL: %v", r.Expr, err)
		}
	} else if ownQueries == "" {
		p.errorf(n, "a rule needs an expr (a MetricsQL or PromQL query)")
	}
	e, ok := f["lookback"]
	lookbackOK := false
	r.Lookback, lookbackOK = p.positive(e, ok, "lookback", kf.lookback, false)
	e, stepGiven := f["step"]
	stepOK := intervalOK
	if stepGiven {
		r.Step, stepOK = p.positive(e, true, "step", interval, false)
	}
	if lookbackOK && stepOK && r.Lookback > 0 {
		at, what := n, "step (the group interval)"
		if stepGiven {
			at, what = resolve(e.v), "step"
		}
		switch {
		case r.Step > r.Lookback:
			p.errorf(at, "%s %s must not exceed lookback %s", what, dur.Format(r.Step), dur.Format(r.Lookback))
		case kf.unbounded:
			// Fetched in parts: no bound on points per series.
		case r.Lookback/r.Step > MaxPointsPerQuery || (r.Lookback/r.Step == MaxPointsPerQuery && r.Lookback%r.Step != 0):
			p.errorf(at, "lookback %s / %s %s gives more than %d points per series; raise step or shorten lookback",
				dur.Format(r.Lookback), what, dur.Format(r.Step), MaxPointsPerQuery)
		}
	}
	e, ok = f["for"]
	r.For, _ = p.positive(e, ok, "for", 0, true)
	e, ok = f["keep_firing_for"]
	r.KeepFiringFor, _ = p.positive(e, ok, "keep_firing_for", 0, true)
	e, ok = f["repeat_interval"]
	r.RepeatInterval, _ = p.positive(e, ok, "repeat_interval", DefaultRepeatInterval, true)
	if stepOK {
		p.absence(&r, f)
	}
	if e, ok := f["min_dev"]; ok {
		v := resolve(e.v)
		x, err := strconv.ParseFloat(strings.TrimSpace(v.Value), 64)
		switch {
		case v.Kind != yaml.ScalarNode || err != nil:
			p.errorf(v, "min_dev must be a number (the smallest absolute deviation from the expected value worth a finding), got %q", v.Value)
		case math.IsNaN(x) || math.IsInf(x, 0) || x < 0:
			p.errorf(v, "min_dev must be a finite number ≥ 0, got %s", v.Value)
		default:
			r.MinDev = x
		}
	}
	if e, ok := f["labels"]; ok {
		r.Labels = p.labels(resolve(e.v))
	}
	if kf.finish != nil {
		kf.finish(p, &r, ruleNodes{block: resolve(block.v), keys: f, lookbackOK: lookbackOK})
	}
	return r, true
}

// absence reads resolve_after_absent and forget_after, or derives their
// defaults from the rule's step and lifecycle settings.
func (p *parser) absence(r *Rule, f map[string]pair) {
	r.ResolveAfterAbsent, r.ForgetAfter = 0, 0
	r.ResolveAfterAbsent = r.AbsentAfter()
	e, given := f["resolve_after_absent"]
	if given {
		d, ok := p.positive(e, true, "resolve_after_absent", r.ResolveAfterAbsent, false)
		switch {
		case !ok:
			given = false
		case d < 2*r.Step:
			// The newest point of a live series can lag the evaluation by
			// a step; a shorter bound would resolve live alerts.
			p.errorf(resolve(e.v), "resolve_after_absent %s must be at least two steps (%s): a live series' newest point can lag the evaluation by a step",
				dur.Format(d), dur.Format(2*r.Step))
			given = false
		default:
			r.ResolveAfterAbsent = d
		}
	}
	r.ForgetAfter = r.Forget()
	if e, ok := f["forget_after"]; ok {
		d, ok := p.positive(e, true, "forget_after", r.ForgetAfter, false)
		switch {
		case !ok:
		case d < r.ResolveAfterAbsent:
			what := "resolve_after_absent"
			if !given {
				what = "resolve_after_absent (by default the longest of for plus three steps, keep_firing_for and 5m)"
			}
			p.errorf(resolve(e.v), "forget_after %s must not be shorter than %s %s: a series' alert resolves before its state is forgotten",
				dur.Format(d), what, dur.Format(r.ResolveAfterAbsent))
		default:
			r.ForgetAfter = d
		}
	}
}

func (p *parser) labels(n *yaml.Node) map[string]string {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "labels must be a mapping of label names to values, got %s", kind(n))
		return nil
	}
	out := map[string]string{}
	for _, kv := range p.pairs(n, "labels") {
		name := kv.k.Value
		switch {
		case !labelNameRE.MatchString(name):
			p.errorf(kv.k, "label name %q must match %s", name, labelNameRE)
			continue
		case strings.HasPrefix(name, "__"):
			p.errorf(kv.k, "label name %q must not start with __ (reserved for internal use)", name)
			continue
		}
		v := resolve(kv.v)
		if v.Kind != yaml.ScalarNode || isNull(v) {
			p.errorf(v, "label %q must have a value (a string), got %s", name, kind(v))
			continue
		}
		out[name] = v.Value
	}
	return out
}

func (p *parser) detector(n *yaml.Node) *Detector {
	d := &Detector{Name: DefaultDetector}
	switch n.Kind {
	case yaml.ScalarNode:
		if !isNull(n) && strings.TrimSpace(n.Value) != "" {
			d.Name = strings.TrimSpace(n.Value)
		}
	case yaml.MappingNode:
		for _, kv := range p.pairs(n, "detector") {
			v := resolve(kv.v)
			if kv.k.Value == "name" {
				if s, ok := p.str(v, "detector name"); ok && strings.TrimSpace(s) != "" {
					d.Name = strings.TrimSpace(s)
				}
				continue
			}
			if v.Kind != yaml.ScalarNode || isNull(v) {
				p.errorf(v, "detector parameter %q must be a single value such as 3 or 0.5, got %s", kv.k.Value, kind(v))
				continue
			}
			if d.Params == nil {
				d.Params = map[string]string{}
			}
			d.Params[kv.k.Value] = v.Value
		}
	default:
		p.errorf(n, "detector must be a name (detector: sigma) or a mapping (detector: {name: sigma, k: 3}), got %s", kind(n))
	}
	return d
}

// yamlErrMsg strips the positions yaml.v3 puts in its messages: the
// caller reports the node's own position.
func yamlErrMsg(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			if sm := yamlLineRE.FindStringSubmatch(m); sm != nil {
				m = sm[2]
			}
			msgs[i] = m
		}
		return strings.Join(msgs, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}
