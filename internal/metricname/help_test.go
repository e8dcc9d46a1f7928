package metricname

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestWritePrometheusGivesEachFamilyItsHelp writes a set holding each
// kind of metric, with metadata on as in the daemon, and reads it back
// with Prometheus' text parser: each family has its help text and type, a
// histogram has le buckets, and a writer's own help text is kept.
func TestWritePrometheusGivesEachFamilyItsHelp(t *testing.T) {
	metrics.ExposeMetadata(true)
	defer metrics.ExposeMetadata(false)
	set := metrics.NewSet()
	set.NewCounter(Name("inferwatch_samples_dropped_total", "reason", "nan")).Inc()
	set.NewCounter(Name("inferwatch_samples_dropped_total", "reason", "inf"))
	set.NewGauge("inferwatch_series_tracked", func() float64 { return 3 })
	h := set.NewPrometheusHistogramExt(Name("inferwatch_source_request_duration_seconds", "path", "/api/v1/query"), RequestBuckets())
	h.Update(0.003)
	h.Update(0.2)
	set.NewSummary("inferwatch_report_duration_seconds").Update(2)
	set.NewCounter("inferwatch_no_such_family_total")
	set.RegisterMetricsWriter(func(w io.Writer) {
		io.WriteString(w, "# HELP inferwatch_anomaly_score Its own text.\n# TYPE inferwatch_anomaly_score gauge\ninferwatch_anomaly_score 1\n")
	})
	var page bytes.Buffer
	WritePrometheus(&page, set)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(page.String()))
	if err != nil {
		t.Fatalf("page does not parse: %v\n%s", err, page.String())
	}
	for name, typ := range map[string]dto.MetricType{
		"inferwatch_samples_dropped_total":           dto.MetricType_COUNTER,
		"inferwatch_series_tracked":                  dto.MetricType_GAUGE,
		"inferwatch_source_request_duration_seconds": dto.MetricType_HISTOGRAM,
		"inferwatch_report_duration_seconds":         dto.MetricType_SUMMARY,
	} {
		f := fams[name]
		if f == nil || f.GetHelp() != help[name] || f.GetType() != typ {
			t.Errorf("%s: %v, want help %q and type %v\n%s", name, f, help[name], typ, page.String())
		}
	}
	if got := fams["inferwatch_anomaly_score"].GetHelp(); got != "Its own text." {
		t.Errorf("a writer's help text became %q", got)
	}
	if got := fams["inferwatch_no_such_family_total"].GetHelp(); got != "" {
		t.Errorf("a family without help text got %q", got)
	}
	hist := fams["inferwatch_source_request_duration_seconds"].GetMetric()[0].GetHistogram()
	var le []float64
	for _, b := range hist.GetBucket() {
		le = append(le, b.GetUpperBound())
	}
	want := append(RequestBuckets(), math.Inf(1))
	if !slices.Equal(le, want) || hist.GetSampleCount() != 2 || hist.GetBucket()[2].GetCumulativeCount() != 1 {
		t.Errorf("histogram %v, want buckets le %v with 1 sample up to 5 ms and 2 in all", hist, want)
	}
}

// TestWritePrometheusWithoutMetadata: with metadata off (the package's
// default) the page is the set's own.
func TestWritePrometheusWithoutMetadata(t *testing.T) {
	set := metrics.NewSet()
	set.NewCounter("inferwatch_samples_scored_total").Add(7)
	var got, want bytes.Buffer
	WritePrometheus(&got, set)
	set.WritePrometheus(&want)
	if got.String() != want.String() || strings.Contains(got.String(), "#") {
		t.Fatalf("got\n%s\nwant\n%s", got.String(), want.String())
	}
}

// TestHelpTexts: each help text is one line of plain text, as the # HELP
// line needs, and each family's histogram buckets rise.
func TestHelpTexts(t *testing.T) {
	for name, h := range help {
		if h == "" || strings.ContainsAny(h, "\\\n") || !strings.HasSuffix(h, ".") || !model.IsValidLegacyMetricName(name) {
			t.Errorf("%s: help %q: want one sentence, no backslash or line feed", name, h)
		}
	}
	for _, b := range [][]float64{RequestBuckets(), EvaluationBuckets(), FsyncBuckets(), ReportBuckets()} {
		if err := metrics.ValidateBuckets(b); err != nil {
			t.Errorf("%v: %v", b, err)
		}
	}
}

// creators are the functions whose first argument names a metric: the
// metrics package's constructors and Name.
var creators = regexp.MustCompile(`^(GetOrCreate|New)(Counter|FloatCounter|Gauge|Histogram|PrometheusHistogram|PrometheusHistogramExt|Summary|SummaryExt)$|^Name$`)

var family = regexp.MustCompile(`^inferwatch_[a-z0-9_]*[a-z0-9]`)

// TestEveryMetricHasHelp reads the module's Go files (tests left out) for
// the metric families they create and checks that each has a help text,
// and that each help text belongs to a family some code creates.
func TestEveryMetricHasHelp(t *testing.T) {
	created := map[string]string{} // family -> where
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "../.." && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !creators.MatchString(sel.Sel.Name) {
				return true
			}
			if lit := firstString(call.Args[0]); lit != "" {
				if fam := family.FindString(lit); fam != "" {
					created[fam] = fset.Position(call.Pos()).String()
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Known creations, so that a scan that finds nothing cannot pass.
	for _, fam := range []string{"inferwatch_group_evaluations_total", "inferwatch_source_request_duration_seconds",
		"inferwatch_alertmanager_alerts_dropped_total", "inferwatch_writeback_requests_total", "inferwatch_keda_requests_total"} {
		if created[fam] == "" {
			t.Errorf("the scan did not find %s", fam)
		}
	}
	for fam, where := range created {
		if help[fam] == "" {
			t.Errorf("%s (created at %s) has no help text in metricname's help table", fam, where)
		}
	}
	for fam := range help {
		if created[fam] == "" {
			t.Errorf("%s has a help text but no code creates it", fam)
		}
	}
}

// firstString returns the first string literal in e, unquoted: the metric
// name of "name", `name{…}` + label or fmt.Sprintf(`name{…}`, …).
func firstString(e ast.Expr) string {
	var s string
	ast.Inspect(e, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && s == "" {
			s, _ = strconv.Unquote(lit.Value)
		}
		return s == ""
	})
	return s
}

// TestDocsListEveryMetric: the table of the daemon's own metrics in
// docs/production.md names every family that has a help text, and no
// other.
func TestDocsListEveryMetric(t *testing.T) {
	const page = "docs/production.md"
	b, err := os.ReadFile("../../" + page)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The daemon's own metrics\n")
	if !ok {
		t.Fatalf(`%s has no section "The daemon's own metrics"`, page)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`(inferwatch_[a-z0-9_]+)").FindAllStringSubmatch(section, -1) {
		listed[m[1]] = true
	}
	for fam := range help {
		if !listed[fam] {
			t.Errorf("the metrics table of %s lacks %s", page, fam)
		}
	}
	for fam := range listed {
		if help[fam] == "" {
			t.Errorf("the metrics table of %s lists %s, which has no help text", page, fam)
		}
	}
}
