package ingest

import (
	"context"
	"errors"
	"hash/maphash"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// streamPartPoints is how many points a streamed export hands over in one
// part: what the client holds of a response while the caller uses it.
const streamPartPoints = 1 << 18

// maxSplitDepth bounds how often the client splits one request the store
// refused: by time down to a few points, by series down to a few values.
const maxSplitDepth = 12

// runExport fetches the time chunks of an export call one after another,
// each with one request whose series are handed over as they are decoded,
// then a Done part.
func (c *Client) runExport(ctx context.Context, rc *rangeCall, yield func(Part, error) bool) {
	stopped := false
	emit := func(ss []Series) bool {
		if !yield(Part{Series: ss}, nil) {
			stopped = true
			return false
		}
		return true
	}
	for _, ch := range rc.chunks {
		err := c.exportSelector(ctx, rc, rc.query, ch[0], ch[1], 0, false, emit)
		switch {
		case stopped || errors.Is(err, errStopped):
			return
		case err != nil:
			yield(Part{}, err)
			return
		}
		if !yield(Part{Done: time.UnixMilli(ch[1])}, nil) {
			return
		}
	}
}

// exportSelector hands the series of selector from from to to over to
// emit. When the store refuses the export for one of its limits (named in
// its answer), it splits the request: a limit on samples by time, in
// halves; a limit on series by the values of a label, into as few shards
// as that limit needs, by the label with the fewest values that gives
// them (few, short matchers, each an index search of the store). It splits
// one request by time once: the store counts the samples of whole blocks,
// so halves of a range within one block are refused again. A series comes
// once, except that a range split by time comes in consecutive parts.
func (c *Client) exportSelector(ctx context.Context, rc *rangeCall, selector string, from, to int64, depth int, halved bool, emit func([]Series) bool) error {
	err := c.fetchStream(ctx, rc, selector, from, to, emit)
	if err == nil || errors.Is(err, errStopped) || depth >= maxSplitDepth {
		return err
	}
	limit, most := storeRefusal(err)
	switch {
	case limit == "":
		return err
	case limit == "samples" && to > from && !halved:
		mid := from + (to-from)/rc.stepMs/2*rc.stepMs
		c.log.Warn("the store refused an export for its limit on samples; fetching it in halves",
			"query", rc.query, "selector", selector, "from", time.UnixMilli(from).UTC(), "to", time.UnixMilli(to).UTC(), "limit", most)
		c.splits["time"].Inc()
		rc.timeSplit = true
		if err := c.exportSelector(ctx, rc, selector, from, mid, depth+1, true, emit); err != nil {
			return err
		}
		return c.exportSelector(ctx, rc, selector, mid+rc.stepMs, to, depth+1, true, emit)
	}
	if limit == "samples" {
		most = 0 // a limit on samples says nothing of how many series fit
	}
	shards, label, perr := c.seriesSplit(ctx, selector, from, to, most)
	if perr != nil || len(shards) < 2 {
		if perr != nil {
			c.log.Warn("the store refused an export for its limits and cannot be asked how to split it", "query", rc.query, "err", perr)
		}
		return err
	}
	c.log.Warn("the store refused an export for its limit on "+limit+"; fetching it in shards by a label",
		"query", rc.query, "selector", selector, "limit", most, "label", label, "shards", len(shards))
	c.splits["series"].Inc()
	for _, sh := range shards {
		if err := c.exportSelector(ctx, rc, sh, from, to, depth+1, halved, emit); err != nil {
			return err
		}
	}
	return nil
}

// storeRefusal names the limit of VictoriaMetrics (or of Prometheus) that
// refused a request, "series" or "samples", and its value when the answer
// gives it (0 when not); "" when err is not such a refusal.
func storeRefusal(err error) (limit string, most int) {
	var re *RequestError
	if !errors.As(err, &re) || re.StatusCode/100 != 4 {
		return "", 0
	}
	msg := re.Body
	if re.Err != nil {
		msg += " " + re.Err.Error()
	}
	number := func(after string) int {
		i := strings.Index(msg, after)
		if i < 0 {
			return 0
		}
		rest := msg[i+len(after):]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		n, _ := strconv.Atoi(rest[:j])
		return n
	}
	switch {
	case strings.Contains(msg, "; either narrow down the search or increase -search.max"):
		// "the number of matching timeseries exceeds 300; either narrow …"
		return "series", number("exceeds ")
	case strings.Contains(msg, "-search.maxSamplesPerQuery"):
		return "samples", number("-search.maxSamplesPerQuery=")
	case strings.Contains(msg, "-search.maxSamplesPerSeries"):
		return "samples", number("-search.maxSamplesPerSeries=")
	case strings.Contains(msg, "would load too many samples"):
		return "samples", 0
	}
	return "", 0
}

// seriesSplit splits the series of selector into shards of at most about
// most series each (two when most is 0): by the label most of them carry
// that has the fewest values and still as many as the shards, each shard
// the selector with that label's matcher added, and one more for the
// series without the label. It returns nil when no label splits them.
func (c *Client) seriesSplit(ctx context.Context, selector string, fromMs, toMs int64, most int) ([]string, string, error) {
	sel := seriesSelector(selector)
	if sel == nil {
		return nil, "", nil
	}
	sp, err := c.tsdbStatus(ctx, selector, sel, toMs)
	if err != nil {
		return nil, "", err
	}
	k := 2
	if most > 0 {
		// A quarter more shards than the limit needs: the values of a
		// label do not split the series evenly.
		k = max(2, int(math.Ceil(1.25*float64(sp.series)/float64(most))))
	}
	sp.label = ""
	fewest := math.MaxInt
	widest, widestN := "", 1
	for _, e := range sp.valueCounts {
		if 2*sp.carriers[e.Name] < sp.series {
			continue
		}
		if e.Value >= k && e.Value < fewest {
			sp.label, fewest = e.Name, e.Value
		}
		if e.Value > widestN {
			widest, widestN = e.Name, e.Value
		}
	}
	if sp.label == "" {
		sp.label = widest
	}
	if sp.label == "" {
		return nil, "", nil
	}
	if err := c.labelValuesOf(ctx, sp, selector, fromMs, toMs); err != nil {
		return nil, "", err
	}
	if len(sp.values) < 2 {
		return nil, "", nil
	}
	return sp.selectors(min(k, len(sp.values))), sp.label, nil
}

// fetchStream fetches the series of selector from from to to in one
// export and hands them to emit as they are decoded, in parts; a one-point
// range asks for the newest sample of its step. A series whose points the
// short look-behind cannot settle (see gridder) is held back and fetched
// again, with the others of its kind, from where VictoriaMetrics' own
// look-behind begins.
func (c *Client) fetchStream(ctx context.Context, rc *rangeCall, selector string, from, to int64, emit func([]Series) bool) error {
	params := url.Values{
		"match[]": {selector},
		"start":   {formatSeconds(exportFrom(from, to, rc.stepMs, true))},
		"end":     {formatSeconds(to)},
	}
	if from == to {
		ss, err := c.exportPoint(ctx, rc, selector, to)
		if err == nil && len(ss) > 0 && !emit(ss) {
			return errStopped
		}
		return err
	}
	g := &gridder{start: from, end: to, step: rc.stepMs}
	short, long := exportFrom(from, to, rc.stepMs, true), exportFrom(from, to, rc.stepMs, false)
	if short != long {
		g.from = short
	}
	seed := maphash.MakeSeed()
	var held map[uint64]bool
	keep := func(ls Labels) bool {
		if !g.unsure {
			return true
		}
		g.unsure = false
		if held == nil {
			held = map[uint64]bool{}
		}
		held[labelsHash(seed, ls)] = true
		return false
	}
	decode := func(body io.Reader, lim ResponseLimits, _ int) ([]Series, error) {
		g.samples, g.made, g.unsure = 0, 0, false
		// The parts are the caller's once handed over: the response's
		// size bounds nothing the client holds.
		lim.Bytes = 0
		d := newReadDecoder(body, lim, 0, readBufSize)
		d.lc = c.labels
		return d.exportStream(g.points, keep, streamPartPoints, emit)
	}
	ss, err := c.doStream(ctx, "export", pathExport, rc.query, params, decode)
	if err != nil {
		return err
	}
	if len(ss) > 0 && !emit(ss) {
		return errStopped
	}
	if g.made > 0 && g.samples > 2*g.made {
		// The store keeps more samples than the points asked for: its
		// query_range moves fewer bytes.
		c.plans.markSparse(rc.query)
	}
	if len(held) == 0 {
		return nil
	}
	c.lookBehinds.Inc()
	g.from = 0
	keep = func(ls Labels) bool { return held[labelsHash(seed, ls)] }
	params.Set("start", formatSeconds(long))
	ss, err = c.doStream(ctx, "export", pathExport, rc.query, params, decode)
	if err != nil {
		return err
	}
	if len(ss) > 0 && !emit(ss) {
		return errStopped
	}
	return nil
}

// labelsHash is a hash of the names and values of ls.
func labelsHash(seed maphash.Seed, ls Labels) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, l := range ls {
		h.WriteString(l.Name)
		h.WriteByte(0)
		h.WriteString(l.Value)
		h.WriteByte(0)
	}
	return h.Sum64()
}
