package ingest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// LineError is a line of a file that does not read, or a sample of a file
// without lines. It prints as file:line: field "name": what is wrong.
type LineError struct {
	File   string
	Line   int    // from 1; 0 when the format has no lines
	Sample int    // with Line 0: the sample's number, from 1 (0: none)
	Field  string // the column or field at fault; "" when the line as a whole is
	Err    error  // what is wrong: *TimeError, *GridError, *DecompressError, ErrNoTimeField, …
}

func (e *LineError) Error() string {
	var b strings.Builder
	b.WriteString(e.location())
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *LineError) Unwrap() error { return e.Err }

// location is "file:line", "file: sample n" or "file".
func (e *LineError) location() string {
	switch {
	case e.Line > 0:
		return e.File + ":" + strconv.Itoa(e.Line)
	case e.Sample > 0:
		return e.File + ": sample " + strconv.Itoa(e.Sample)
	}
	return e.File
}

// DecompressError is a gzipped file that does not decompress: cut off
// (Err is io.ErrUnexpectedEOF) or corrupt.
type DecompressError struct {
	Err error
}

func (e *DecompressError) Error() string {
	return fmt.Sprintf("decompressing: %v (is the gzip file whole?)", e.Err)
}

func (e *DecompressError) Unwrap() error { return e.Err }

// TimeError is a value that is not a time in the unit it is read in.
type TimeError struct {
	Value string   // as the file writes it, without a JSON string's quotes
	Unit  TimeUnit // how numbers were read
}

func (e *TimeError) Error() string {
	return fmt.Sprintf("%q is not a time: want %s", e.Value, e.Unit.formats())
}

// ErrNoTimeField is what a LineError wraps when a log's header or line
// has no field to read the time from.
var ErrNoTimeField = errors.New("no time field")

// GridError is a sample off the grid of its file's step, two samples on
// one step, or a series whose step or grid differs from the others it is
// summed with. Resample reads such samples: each step is the mean of the
// samples in it. A LineError, or an error naming the file, wraps it.
type GridError struct {
	Reason string        // what is wrong
	Step   time.Duration // the step of the grid the samples miss
}

func (e *GridError) Error() string { return e.Reason }
