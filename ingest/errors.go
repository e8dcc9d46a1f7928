package ingest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxBodyInError is how much of a bad response body an error quotes.
const maxBodyInError = 512

// APIError is a response of the form
// {"status":"error","errorType":"bad_data","error":"..."}.
type APIError struct {
	Status    string // "error"
	ErrorType string // e.g. "bad_data", "timeout", "execution"
	Err       string // the server's message
}

func (e *APIError) Error() string {
	t := e.ErrorType
	if t == "" {
		t = "unknown"
	}
	return fmt.Sprintf("server error (%s): %s", t, e.Err)
}

// DecodeError says where a response body stopped making sense.
type DecodeError struct {
	Offset int    // byte offset in the body
	Reason string // what was expected
	Near   string // up to 32 bytes from Offset
	Head   string // the first bytes of the body (at most 512)
}

func (e *DecodeError) Error() string {
	near := "end of input"
	if e.Near != "" {
		near = strconv.Quote(e.Near)
	}
	return fmt.Sprintf("malformed query response at offset %d near %s: %s; body begins %s",
		e.Offset, near, e.Reason, strconv.Quote(e.Head))
}

// LimitError is a response refused because it went past a limit: the
// client's MaxResponseBytes, MaxResponseSeries or MaxResponsePoints, or a
// field of ResponseLimits. It is refused as soon as the limit is passed and
// the rest of its body is not read.
type LimitError struct {
	Limit         string // "bytes", "series" or "points"
	Max           int64  // the limit's value
	Read          int64  // bytes of the body read when it was refused (0: the answers of a split range, once joined)
	ContentLength int64  // the announced length, when that alone refused it; else 0
}

func (e *LimitError) Error() string {
	if e.ContentLength > 0 {
		return fmt.Sprintf("response refused: Content-Length %d is past the %s limit of %d; the body was not read",
			e.ContentLength, e.Limit, e.Max)
	}
	if e.Read == 0 {
		return fmt.Sprintf("response refused: past the %s limit of %d", e.Limit, e.Max)
	}
	return fmt.Sprintf("response refused: past the %s limit of %d; stopped reading after %d bytes of the body",
		e.Limit, e.Max, e.Read)
}

var (
	// errRefused ends reading a body refused by a limit.
	errRefused = errors.New("response refused")
	// errBadRead is a reader that returned an impossible count.
	errBadRead = errors.New("reader returned an invalid count")
)

// RequestError is a failed request to a Prometheus-compatible API. It names
// the operation, the URL with credentials redacted and without its query
// string, the query, and, when the server answered, its status and the
// first bytes of the body.
type RequestError struct {
	Op         string // "query_range" or "query"
	URL        string // redacted, without query parameters
	Query      string
	StatusCode int    // 0 when no response was received
	Status     string // e.g. "500 Internal Server Error"
	Body       string // first bytes of an unexpected body
	Attempts   int
	Err        error // the cause: *APIError, *DecodeError, *LimitError, a transport error, a context error
}

func (e *RequestError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (query %q)", e.Op, e.URL, e.Query)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %s", e.Status)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Body != "" {
		fmt.Fprintf(&b, ": body: %q", e.Body)
	}
	return b.String()
}

func (e *RequestError) Unwrap() error { return e.Err }

func headOf(body []byte) string {
	if len(body) > maxBodyInError {
		body = body[:maxBodyInError]
	}
	return string(body)
}
