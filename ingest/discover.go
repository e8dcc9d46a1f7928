package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/inferwatch/inferwatch/internal/order"
)

// The questions of this file are about what a store holds rather than
// about values: which label values and which series match a selector.
// Prometheus and VictoriaMetrics answer both alike. They go through the
// same requests as queries do: retried after a 5xx, a 429 or a connection
// error, and failing with a *RequestError that names the URL with its
// credentials redacted, the status, and the first bytes of a bad body.
const (
	pathSeries      = "/api/v1/series"
	pathLabelValues = "/api/v1/label/" // + name + "/values"
)

// LabelValues returns the values of the label name (e.g. "__name__" for
// the metric names) that the series matching the series selector match
// have between start and end, as the store sorts them
// (/api/v1/label/NAME/values with match[]).
func (c *Client) LabelValues(ctx context.Context, name, match string, start, end time.Time) ([]string, error) {
	var values []string
	decode := func(body io.Reader, lim ResponseLimits, _ int) ([]Series, error) {
		values = nil
		return nil, decodeAPIData(body, lim, &values)
	}
	path := pathLabelValues + url.PathEscape(name) + "/values"
	if _, err := c.do(ctx, "label values", path, match, rangeParams(match, start, end), 0, decode); err != nil {
		return nil, err
	}
	return values, nil
}

// Series returns the label sets, metric name included, of the series that
// match the series selector match and have samples between start and end
// (/api/v1/series with match[]). More series than the client's
// MaxResponseSeries refuse the answer with a *LimitError.
func (c *Client) Series(ctx context.Context, match string, start, end time.Time) ([]Labels, error) {
	var out []Labels
	decode := func(body io.Reader, lim ResponseLimits, _ int) ([]Series, error) {
		var sets []map[string]string
		out = nil
		if err := decodeAPIData(body, lim, &sets); err != nil {
			return nil, err
		}
		if lim.Series > 0 && len(sets) > lim.Series {
			return nil, &LimitError{Limit: "series", Max: int64(lim.Series)}
		}
		out = make([]Labels, len(sets))
		for i, m := range sets {
			out[i] = LabelsFromMap(m)
		}
		return nil, nil
	}
	if _, err := c.do(ctx, "series", pathSeries, match, rangeParams(match, start, end), 0, decode); err != nil {
		return nil, err
	}
	return out, nil
}

func rangeParams(match string, start, end time.Time) url.Values {
	return url.Values{
		"match[]": {match},
		"start":   {formatSeconds(start.UnixMilli())},
		"end":     {formatSeconds(end.UnixMilli())},
	}
}

// decodeAPIData reads a JSON answer {"status":"success","data":…} of at
// most lim.Bytes bytes and decodes its data into v.
func decodeAPIData(body io.Reader, lim ResponseLimits, v any) error {
	r := body
	if lim.Bytes > 0 {
		r = io.LimitReader(body, lim.Bytes+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if lim.Bytes > 0 && int64(len(b)) > lim.Bytes {
		return &LimitError{Limit: "bytes", Max: lim.Bytes, Read: int64(len(b))}
	}
	var answer struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		return jsonDecodeError(b, 0, err)
	}
	switch {
	case answer.Status == "error":
		return &APIError{Status: answer.Status, ErrorType: answer.ErrorType, Err: answer.Error}
	case answer.Status != "success":
		return &DecodeError{Reason: fmt.Sprintf("status %q, want \"success\"", answer.Status), Near: near(b, 0), Head: headOf(b)}
	case len(answer.Data) == 0:
		return &DecodeError{Reason: "no data", Near: near(b, 0), Head: headOf(b)}
	}
	// The data's offset in the body, for the error's position.
	off := max(bytes.Index(b, answer.Data), 0)
	if err := json.Unmarshal(answer.Data, v); err != nil {
		return jsonDecodeError(b, off, err)
	}
	return nil
}

// jsonDecodeError is a *DecodeError for err, which encoding/json returned
// decoding the part of body at base.
func jsonDecodeError(body []byte, base int, err error) *DecodeError {
	off := base
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off += int(se.Offset)
	case errors.As(err, &te):
		off += int(te.Offset)
	}
	off = min(off, len(body))
	return &DecodeError{Offset: off, Reason: err.Error(), Near: near(body, off), Head: headOf(body)}
}

// near is up to 32 bytes of b from off.
func near(b []byte, off int) string {
	return string(b[off:min(off+32, len(b))])
}

// SampleInterval is the median time between consecutive samples of the
// series, over all of them, and how many intervals it was taken from; 0
// and 0 when no series has two samples. On raw samples (an instant query
// of a range, m[1h]) it is the scrape interval.
func SampleInterval(ss []Series) (time.Duration, int) {
	var gaps []float64
	for _, s := range ss {
		for i := 1; i < len(s.Timestamps); i++ {
			if d := s.Timestamps[i] - s.Timestamps[i-1]; d > 0 {
				gaps = append(gaps, float64(d))
			}
		}
	}
	if len(gaps) == 0 {
		return 0, 0
	}
	return time.Duration(order.Median(gaps)) * time.Millisecond, len(gaps)
}
