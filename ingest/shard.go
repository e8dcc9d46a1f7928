package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metricsql"
)

// planCache keeps, per query, what the client learnt of it: how many series
// it returned last, whether its raw samples outnumber its points, and its
// series shards. It is bounded.
type planCache struct {
	mu sync.Mutex
	q  map[string]*queryInfo
}

type queryInfo struct {
	series    int
	hasSeries bool
	sparseAt  time.Time
	shards    *seriesShards
	shardsAt  time.Time
}

const (
	maxPlannedQueries = 4096
	// planTTL is how long a series shard plan, and a query found sparse,
	// are kept before they are asked again.
	planTTL = 10 * time.Minute
)

func newPlanCache() *planCache { return &planCache{q: map[string]*queryInfo{}} }

// get returns the entry of query, making room for it. The caller holds mu.
func (pc *planCache) get(query string) *queryInfo {
	qi := pc.q[query]
	if qi == nil {
		if len(pc.q) >= maxPlannedQueries {
			for k := range pc.q {
				delete(pc.q, k)
				break
			}
		}
		qi = &queryInfo{}
		pc.q[query] = qi
	}
	return qi
}

func (pc *planCache) series(query string) (int, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if qi := pc.q[query]; qi != nil && qi.hasSeries {
		return qi.series, true
	}
	return 0, false
}

func (pc *planCache) sawSeries(query string, n int) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	qi := pc.get(query)
	qi.series, qi.hasSeries = n, true
}

func (pc *planCache) sparse(query string) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	qi := pc.q[query]
	return qi != nil && !qi.sparseAt.IsZero() && time.Since(qi.sparseAt) < planTTL
}

func (pc *planCache) markSparse(query string) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.get(query).sparseAt = time.Now()
}

func (pc *planCache) shards(query string) *seriesShards {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if qi := pc.q[query]; qi != nil && qi.shards != nil && time.Since(qi.shardsAt) < planTTL {
		return qi.shards
	}
	return nil
}

func (pc *planCache) setShards(query string, sp *seriesShards) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	qi := pc.get(query)
	qi.shards, qi.shardsAt = sp, time.Now()
}

// seriesShards splits the series of a selector by the values of one label.
type seriesShards struct {
	series  int    // of the selector, as the store counts them for the day of the range's end
	label   string // "" when no label splits them
	values  []string
	missing bool // some series lack the label
	sel     *metricsql.MetricExpr
	// carriers counts the series that carry each label, valueCounts the
	// values of each label, as /api/v1/status/tsdb gives them.
	carriers    map[string]int
	valueCounts []nameCount

	mu    sync.Mutex
	built map[int][]string
}

// maxShardSelector bounds the length of one shard's selector (the store
// refuses queries longer than -search.maxQueryLen, 16 KiB by default).
const maxShardSelector = 8 << 10

// selectors returns about n selectors whose series together are the
// selector's, each once: the label's values dealt out in turn (as the
// store sorts them), one shard more for the series without the label, and
// more shards where a shard's selector would be too long. nil when the
// series cannot be split.
func (sp *seriesShards) selectors(n int) []string {
	if sp.label == "" || n < 2 {
		return nil
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if s, ok := sp.built[n]; ok {
		return s
	}
	quoted := make([]string, len(sp.values))
	total := 0
	for i, v := range sp.values {
		quoted[i] = regexp.QuoteMeta(v)
		total += len(quoted[i]) + 1
	}
	k := min(max(n, (total+maxShardSelector-1)/maxShardSelector), len(quoted))
	groups := make([][]string, k)
	for i, q := range quoted {
		groups[i%k] = append(groups[i%k], q)
	}
	var out []string
	for _, g := range groups {
		out = append(out, sp.with(metricsql.LabelFilter{Label: sp.label, Value: strings.Join(g, "|"), IsRegexp: true}))
	}
	if sp.missing {
		out = append(out, sp.with(metricsql.LabelFilter{Label: sp.label, Value: ""}))
	}
	for _, s := range out {
		if len(s) > 2*maxShardSelector {
			out = nil // one value alone is too long: do not split
			break
		}
	}
	if sp.built == nil {
		sp.built = map[int][]string{}
	}
	sp.built[n] = out
	return out
}

// with is the selector with lf added to each of its or-groups.
func (sp *seriesShards) with(lf metricsql.LabelFilter) string {
	me := &metricsql.MetricExpr{LabelFilterss: make([][]metricsql.LabelFilter, len(sp.sel.LabelFilterss))}
	for i, g := range sp.sel.LabelFilterss {
		me.LabelFilterss[i] = append(slices.Clip(g), lf)
	}
	return string(me.AppendString(nil))
}

// seriesPlan asks VictoriaMetrics how many series the selector has and by
// which label they split best: the label most of them have with the most
// values (/api/v1/status/tsdb for the day of end), then that label's
// values over the range.
func (c *Client) seriesPlan(ctx context.Context, query string, sel *metricsql.MetricExpr, startMs, endMs int64) (*seriesShards, error) {
	if sp := c.plans.shards(query); sp != nil {
		return sp, nil
	}
	sp, err := c.tsdbStatus(ctx, query, sel, endMs)
	if err != nil {
		return nil, err
	}
	best := 1
	for _, e := range sp.valueCounts {
		if e.Value > best && 2*sp.carriers[e.Name] >= sp.series {
			sp.label, best = e.Name, e.Value
		}
	}
	if sp.label != "" {
		if err := c.labelValuesOf(ctx, sp, query, startMs, endMs); err != nil {
			return nil, err
		}
		if len(sp.values) < 2 {
			sp.label = ""
		}
	}
	c.plans.setShards(query, sp)
	c.log.Debug("series shards planned", "query", query, "series", sp.series, "label", sp.label, "values", len(sp.values))
	return sp, nil
}

// tsdbStatus asks VictoriaMetrics how many series the selector has on the
// day of endMs, how many of them carry each label, and how many values
// each label has (/api/v1/status/tsdb).
func (c *Client) tsdbStatus(ctx context.Context, query string, sel *metricsql.MetricExpr, endMs int64) (*seriesShards, error) {
	var status struct {
		Data struct {
			TotalSeries                int         `json:"totalSeries"`
			SeriesCountByLabelName     []nameCount `json:"seriesCountByLabelName"`
			LabelValueCountByLabelName []nameCount `json:"labelValueCountByLabelName"`
		} `json:"data"`
	}
	date := time.UnixMilli(endMs).UTC().Format("2006-01-02")
	if err := c.getJSON(ctx, "/api/v1/status/tsdb", url.Values{"match[]": {query}, "date": {date}, "topN": {"100"}}, &status); err != nil {
		return nil, err
	}
	sp := &seriesShards{series: status.Data.TotalSeries, sel: sel, carriers: map[string]int{}, valueCounts: status.Data.LabelValueCountByLabelName}
	for _, e := range status.Data.SeriesCountByLabelName {
		sp.carriers[e.Name] = e.Value
	}
	return sp, nil
}

// labelValuesOf asks for the values of sp.label among the series of query
// over the range, and notes whether some series lack it.
func (c *Client) labelValuesOf(ctx context.Context, sp *seriesShards, query string, startMs, endMs int64) error {
	var values struct {
		Data []string `json:"data"`
	}
	params := url.Values{"match[]": {query}, "start": {formatSeconds(startMs)}, "end": {formatSeconds(endMs)}}
	if err := c.getJSON(ctx, "/api/v1/label/"+url.PathEscape(sp.label)+"/values", params, &values); err != nil {
		return err
	}
	sp.values, sp.missing = values.Data, sp.carriers[sp.label] < sp.series
	return nil
}

type nameCount struct {
	Name  string `json:"name"`
	Value int    `json:"value"`
}

// maxPlanBody bounds the answers of the planning requests.
const maxPlanBody = 64 << 20

// getJSON sends one GET (or POST form) to path, without retries, and
// decodes the JSON answer into v.
func (c *Client) getJSON(ctx context.Context, path string, params url.Values, v any) error {
	u := *c.base
	u.Path += path
	if c.base.RawQuery != "" {
		for k, vs := range c.base.Query() {
			if _, ok := params[k]; !ok {
				params[k] = vs
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	var req *http.Request
	var err error
	if form := params.Encode(); c.post(path, form) {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		u.RawQuery = form
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	}
	if err != nil {
		return err
	}
	began := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.observe(path, "error", began)
		return fmt.Errorf("%s: %w", c.redacted(path), transportError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPlanBody))
	c.observe(path, fmt.Sprint(resp.StatusCode), began)
	if err != nil {
		return fmt.Errorf("%s: reading the body: %w", c.redacted(path), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %s: %q", c.redacted(path), resp.Status, headOf(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w; body begins %q", c.redacted(path), err, headOf(body))
	}
	return nil
}
