package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metricsql"
)

const pathExport = "/api/v1/export"

// Part is some of the series of a range, as QueryRangeParts hands them
// over.
type Part struct {
	Series []Series
	// Done is set on the last part of a time chunk: every point of the
	// range up to Done has been handed over. It is zero on the other parts.
	Done time.Time
}

// QueryRange evaluates query at each step from start to end inclusive, as
// QueryRangeParts fetches it, and joins the parts by labels, in time
// order, each timestamp once. The response limits apply to the joined
// result: each request may take in only the points the answers before it
// left, and the joined series and points are checked as the answers come.
func (c *Client) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Series, error) {
	call, err := c.plan(ctx, query, start, end, step)
	if err != nil {
		return nil, err
	}
	var (
		out    []Series
		index  map[string]int
		points int
		parts  int
	)
	// A range fetched in time chunks, or whose export the store refused
	// and the client halved, comes in parts of the range, which the join
	// puts together by labels. Otherwise each series comes once.
	joined := false
	join := func() {
		joined = true
		index = make(map[string]int, len(out))
		var key []byte
		for i, s := range out {
			key = appendJoinKey(key[:0], s.Labels)
			index[string(key)] = i
		}
	}
	if len(call.chunks) > 1 {
		join()
	}
	var ferr error
	c.run(ctx, call, func() int { return points }, func(p Part, err error) bool {
		if err != nil {
			ferr = err
			return false
		}
		parts++
		if !joined && call.timeSplit {
			join()
		}
		if !joined {
			// Each series once: the parts hold different series.
			if out == nil {
				out = p.Series
			} else {
				out = append(out, p.Series...)
			}
			for _, s := range p.Series {
				points += len(s.Timestamps)
			}
		} else {
			out = joinSeries(out, index, p.Series)
			points = 0
			for _, s := range out {
				points += len(s.Timestamps)
			}
		}
		var le *LimitError
		switch {
		case c.lim.Series > 0 && len(out) > c.lim.Series:
			le = &LimitError{Limit: "series", Max: int64(c.lim.Series)}
		case c.lim.Points > 0 && points > c.lim.Points:
			le = &LimitError{Limit: "points", Max: int64(c.lim.Points)}
		}
		if le != nil {
			// Each answer was within the limit, their union is not.
			c.refused[le.Limit].Inc()
			to := call.endMs
			if !p.Done.IsZero() {
				to = p.Done.UnixMilli()
			}
			ferr = &RequestError{Op: call.op(), URL: c.redacted(call.path()), Query: query,
				Err: fmt.Errorf("joining the answers from %s to %s: %w",
					time.UnixMilli(call.startMs).UTC().Format(time.RFC3339), time.UnixMilli(to).UTC().Format(time.RFC3339), le)}
			return false
		}
		return true
	})
	if ferr != nil {
		return nil, ferr
	}
	c.plans.sawSeries(query, len(out))
	return out, nil
}

// QueryRangeParts evaluates query at each step from start to end inclusive
// and hands the series over in parts as they arrive: the range in time
// chunks, oldest first, each complete (Part.Done) after its parts. A
// series appears once per time chunk, with the chunk's points in time
// order (in consecutive parts of the chunk's range, in order, where the
// store refused the chunk's samples and the client split it by time). The
// series of a part are the caller's (nothing of the client refers to
// them); the parts are not joined. The response limits apply to each
// request (the points limit to each part of a streamed export), and the
// series limit also to each time chunk's series together. It stops at the
// first error, after the parts before it.
//
// The requests: a range longer than MaxPointsPerSeries points is split in
// time chunks (as Prometheus refuses more than 11,000 points per series).
//
// A series selector (a metric name and/or label matchers, MetricsQL's `or`
// groups included; no function, offset, @ or range) whose start and end
// are multiples of step and whose end is more than 30 s ago
// (VictoriaMetrics' default -search.latencyOffset, within which
// query_range fills the newest points in) is fetched from
// VictoriaMetrics' /api/v1/export when the store is VictoriaMetrics (found
// out once, by asking /api/v1/export for nothing), unless DisableExport:
// one request a time chunk, its series decoded and handed over in parts
// as the body arrives, so that the client holds a part, not the response,
// and the store searches its index and reads its blocks once. The raw
// samples come from a look-behind before start (two steps and 30 s;
// VictoriaMetrics' own step and 5 minutes for a range of 20 points or
// fewer, and, for the series that prove to need it, again), mapped onto
// the step grid as VictoriaMetrics' query_range maps them (see grid.go),
// so the points are those query_range returns; a one-point range asks for
// the samples of its one step. When the store refuses an export for one
// of its limits (-search.maxSamplesPerQuery, -search.maxUniqueTimeseries,
// -search.maxExportSeries, named in its answer), the client splits it: by
// time first, then by the values of the label with the fewest values that
// gives the shards the limit needs. A query whose raw samples were more
// than twice as many as its points goes back to query_range, which then
// moves fewer bytes.
//
// Everything else (a rate(), a sum, a selector with offset, a store that
// is not VictoriaMetrics) is fetched with /api/v1/query_range. On
// VictoriaMetrics, a query_range of a series selector expected to return
// more than RequestPoints points is split further: into time chunks of at
// most ChunkPoints points per series, and into series shards by the
// values of the label with the most values (asked of /api/v1/status/tsdb
// and /api/v1/label/…/values), each shard the selector with that label's
// matcher added (`instance=~"a|b|…"`, and `instance=""` for the series
// without it). Up to MaxConcurrentRequests of them are in flight at once.
func (c *Client) QueryRangeParts(ctx context.Context, query string, start, end time.Time, step time.Duration) iter.Seq2[Part, error] {
	return func(yield func(Part, error) bool) {
		call, err := c.plan(ctx, query, start, end, step)
		if err != nil {
			yield(Part{}, err)
			return
		}
		series := 0 // of the time chunk being handed over
		c.run(ctx, call, func() int { return 0 }, func(p Part, err error) bool {
			if err == nil {
				series += len(p.Series)
				if c.lim.Series > 0 && series > c.lim.Series {
					// Each answer was within the limit; the chunk's series
					// together are not.
					c.refused["series"].Inc()
					yield(Part{}, &RequestError{Op: call.op(), URL: c.redacted(call.path()), Query: query,
						Err: fmt.Errorf("the series of the time chunk from %s to %s: %w",
							time.UnixMilli(call.startMs).UTC().Format(time.RFC3339), time.UnixMilli(call.endMs).UTC().Format(time.RFC3339),
							&LimitError{Limit: "series", Max: int64(c.lim.Series)})})
					return false
				}
				if !p.Done.IsZero() {
					c.plans.sawSeries(query, series)
					series = 0
				}
			}
			return yield(p, err)
		})
	}
}

// rangeCall is the plan of one range query: its requests are the time
// chunks times the series shards, chunk by chunk.
type rangeCall struct {
	query                  string
	startMs, endMs, stepMs int64
	export                 bool
	chunks                 [][2]int64 // first and last point of each
	shards                 []string   // selectors; nil: the query itself
	// timeSplit is set once the store refused an export's samples and the
	// client fetches it in halves of its time chunk: from then on a series
	// can come in more than one part of a chunk.
	timeSplit bool
}

func (rc *rangeCall) op() string {
	if rc.export {
		return "export"
	}
	return "query_range"
}

func (rc *rangeCall) path() string {
	if rc.export {
		return pathExport
	}
	return pathQueryRange
}

// plan checks the range and decides the requests of a call.
func (c *Client) plan(ctx context.Context, query string, start, end time.Time, step time.Duration) (*rangeCall, error) {
	if step <= 0 {
		return nil, fmt.Errorf("query_range %s (query %q): step %v must be positive", c.redacted(pathQueryRange), query, step)
	}
	if end.Before(start) {
		return nil, fmt.Errorf("query_range %s (query %q): end %s is before start %s",
			c.redacted(pathQueryRange), query, end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	rc := &rangeCall{query: query, startMs: start.UnixMilli(), endMs: end.UnixMilli(), stepMs: step.Milliseconds()}
	if rc.stepMs <= 0 {
		return nil, fmt.Errorf("query_range %s (query %q): step %v is below one millisecond", c.redacted(pathQueryRange), query, step)
	}
	points := (rc.endMs-rc.startMs)/rc.stepMs + 1
	chunk := int64(c.o.MaxPointsPerSeries)
	if sel := seriesSelector(query); sel != nil && c.victoriaMetrics(ctx) {
		rc.export = !c.o.DisableExport && rc.startMs%rc.stepMs == 0 && rc.endMs%rc.stepMs == 0 &&
			rc.endMs <= time.Now().UnixMilli()-vmLatencyOffset && !c.plans.sparse(query)
		n, known := c.plans.series(query)
		switch {
		case rc.export:
			// One export a time chunk of MaxPointsPerSeries points, its
			// series handed over as they are decoded, so that what the
			// client holds does not grow with the series, and the store
			// searches its index and reads its blocks once (see
			// exportSelector for when it refuses).
		case points > 1 && (!known || int64(n)*points > int64(c.o.RequestPoints)):
			sp, err := c.seriesPlan(ctx, query, sel, rc.startMs, rc.endMs)
			if err != nil {
				c.log.Debug("not sharding a range query by series", "query", query, "err", err)
			} else if total := int64(sp.series) * points; total > int64(c.o.RequestPoints) {
				chunk = min(chunk, int64(c.o.ChunkPoints))
				perRequest := int64(sp.series) * min(points, chunk)
				rc.shards = sp.selectors(int((perRequest + int64(c.o.RequestPoints) - 1) / int64(c.o.RequestPoints)))
			}
		}
	}
	span := (chunk - 1) * rc.stepMs
	for from := rc.startMs; from <= rc.endMs; from += span + rc.stepMs {
		rc.chunks = append(rc.chunks, [2]int64{from, min(from+span, rc.endMs)})
	}
	if len(rc.chunks) > 1 || len(rc.shards) > 1 {
		c.log.Debug("range query planned", "query", query, "path", rc.path(), "chunks", len(rc.chunks), "series_shards", max(1, len(rc.shards)))
	}
	return rc, nil
}

// vmLatencyOffset is VictoriaMetrics' default -search.latencyOffset: a
// query_range point newer than this is filled from the samples before it.
const vmLatencyOffset = 30_000

// request is one request of a call.
type request struct {
	chunk    int
	from, to int64
	selector string // the query, or one series shard of it
	last     bool   // the last shard of its chunk
}

func (rc *rangeCall) requests() []request {
	shards := rc.shards
	if len(shards) == 0 {
		shards = []string{rc.query}
	}
	out := make([]request, 0, len(rc.chunks)*len(shards))
	for i, ch := range rc.chunks {
		for k, sel := range shards {
			out = append(out, request{chunk: i, from: ch[0], to: ch[1], selector: sel, last: k == len(shards)-1})
		}
	}
	return out
}

// run sends the requests of a call, up to MaxConcurrentRequests at once,
// and hands each answer to yield in request order. held is how many
// points the caller holds when a request is sent. It returns once every
// request it sent has ended.
func (c *Client) run(ctx context.Context, rc *rangeCall, held func() int, yield func(Part, error) bool) {
	if rc.export {
		c.runExport(ctx, rc, yield)
		return
	}
	reqs := rc.requests()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		ss  []Series
		err error
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	results := make([]chan answer, len(reqs))
	sent := 0
	for i := range reqs {
		for sent < len(reqs) && sent < i+c.o.MaxConcurrentRequests {
			ch := make(chan answer, 1)
			results[sent] = ch
			rq, prior := reqs[sent], held()
			wg.Go(func() {
				ss, err := c.fetch(ctx, rc, rq, prior)
				ch <- answer{ss, err}
			})
			sent++
		}
		a := <-results[i]
		results[i] = nil
		if a.err != nil {
			cancel()
			yield(Part{}, a.err)
			return
		}
		p := Part{Series: a.ss}
		if reqs[i].last {
			p.Done = time.UnixMilli(reqs[i].to)
		}
		if !yield(p, nil) {
			return
		}
	}
}

// fetch sends one query_range request of a call.
func (c *Client) fetch(ctx context.Context, rc *rangeCall, rq request, prior int) ([]Series, error) {
	params := url.Values{
		"query": {rq.selector},
		"start": {formatSeconds(rq.from)},
		"end":   {formatSeconds(rq.to)},
		"step":  {strconv.FormatFloat(float64(rc.stepMs)/1000, 'f', -1, 64)},
	}
	return c.do(ctx, "query_range", pathQueryRange, rc.query, params, prior, c.readQuery)
}

// exportPoint fetches the one point at of the series of selector: the
// newest sample of its step. Not with reduce_mem_usage, though
// VictoriaMetrics answers it for a third of the work: in v1.151 and
// v1.152 its workers then append a block's samples to pooled buffers that
// may still hold the arrays of an earlier plain export, so two blocks
// exported at once can write over each other, and a series comes back
// with another's value (TestExportOnePointUnderLoad).
func (c *Client) exportPoint(ctx context.Context, rc *rangeCall, selector string, at int64) ([]Series, error) {
	params := url.Values{
		"match[]": {selector},
		"start":   {formatSeconds(exportFrom(at, at, rc.stepMs, true))},
		"end":     {formatSeconds(at)},
	}
	// The series the query returned last time are about as many as come
	// now: room for them up front saves growing the answer as it comes.
	expect, _ := c.plans.series(rc.query)
	if selector != rc.query {
		expect = 0
	}
	last := func(body io.Reader, lim ResponseLimits, prior int) ([]Series, error) {
		d := newReadDecoder(body, lim, prior, readBufSize)
		d.lc = c.labels
		if expect > 0 {
			d.out = make([]Series, 0, expect+expect/16)
		}
		return d.exportLast(at)
	}
	return c.do(ctx, "export", pathExport, rc.query, params, 0, last)
}

// seriesSelector is query parsed when it is a series selector, else nil.
func seriesSelector(query string) *metricsql.MetricExpr {
	e, err := metricsql.Parse(query)
	if err != nil {
		return nil
	}
	me, ok := e.(*metricsql.MetricExpr)
	if !ok || len(me.LabelFilterss) == 0 {
		return nil
	}
	return me
}

// storeKind is what the source is: unknown until asked, then
// VictoriaMetrics or another Prometheus-compatible store.
type storeKind struct {
	mu     sync.Mutex
	known  bool
	vm     bool
	asked  time.Time // when a failed probe was last sent
	probes int
}

// probeAgain is how long after a probe that got no answer the client asks
// again; until then it takes the store not to be VictoriaMetrics.
const probeAgain = time.Minute

// victoriaMetrics reports whether the source is VictoriaMetrics, asking it
// the first time: VictoriaMetrics answers /api/v1/export for a series that
// does not exist with 200 and an empty body of type
// application/stream+json; Prometheus answers 404.
func (c *Client) victoriaMetrics(ctx context.Context) bool {
	k := &c.store
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.known || (!k.asked.IsZero() && time.Since(k.asked) < probeAgain) {
		return k.vm
	}
	params := url.Values{"match[]": {`{__name__="inferwatch_store_probe"}`}, "start": {"1"}, "end": {"1"}}
	pctx, cancel := context.WithTimeout(ctx, min(c.o.Timeout, 10*time.Second))
	defer cancel()
	_, ctype, err := c.doType(pctx, "export", pathExport, "", params, 0, func(r io.Reader, lim ResponseLimits, _ int) ([]Series, error) {
		return ReadExport(r, lim)
	})
	k.probes++
	var re *RequestError
	switch {
	case err == nil:
		k.known, k.vm = true, strings.HasPrefix(ctype, "application/stream+json")
	case errors.As(err, &re) && re.StatusCode/100 == 4:
		k.known, k.vm = true, false // no such endpoint, or not allowed
	default:
		k.asked = time.Now()
		c.log.Debug("the store did not answer whether it is VictoriaMetrics; using query_range", "err", err)
		return false
	}
	c.log.Info("source store", "victoriametrics", k.vm, "url", c.redacted(""))
	return k.vm
}
