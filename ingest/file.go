package ingest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/valyala/fastjson"
)

// FileFormat is a format ReadFile understands.
type FileFormat int

// The formats ReadFile understands.
const (
	FormatCSV           FileFormat = iota // timestamp,value rows, see ReadCSV
	FormatExportJSONL                     // VictoriaMetrics /api/v1/export JSON lines, see ReadExportJSONL
	FormatQueryResponse                   // a Prometheus query or query_range response, see DecodeQueryResponse
)

func (f FileFormat) String() string {
	switch f {
	case FormatCSV:
		return "CSV"
	case FormatExportJSONL:
		return "export JSON lines"
	case FormatQueryResponse:
		return "query response JSON"
	}
	return fmt.Sprintf("FileFormat(%d)", int(f))
}

// ReadFile reads the series in a file, picking the format by extension:
// .csv is CSV (ReadCSV, the series named after the file), .jsonl and .ndjson
// are VictoriaMetrics export JSON lines (ReadExportJSONL), .json is a saved
// Prometheus query_range or query response (DecodeQueryResponse). Any other
// file is sniffed, see SniffFormat. Errors name the file.
func ReadFile(path string) ([]Series, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading series: %w", err)
	}
	var f FileFormat
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		f = FormatCSV
	case ".jsonl", ".ndjson":
		f = FormatExportJSONL
	case ".json":
		f = FormatQueryResponse
	default:
		f = SniffFormat(data)
	}
	switch f {
	case FormatExportJSONL:
		return ReadExportJSONL(bytes.NewReader(data), path)
	case FormatQueryResponse:
		ss, err := DecodeQueryResponse(bytes.TrimPrefix(data, []byte("\uFEFF")))
		if err != nil {
			return nil, fmt.Errorf("%s: decoding a query response: %w", path, err)
		}
		return ss, nil
	default:
		c, err := ReadCSV(bytes.NewReader(data), path, CSVOptions{})
		if err != nil {
			return nil, err
		}
		return []Series{c.Series}, nil
	}
}

// SniffFormat guesses a file's format from its content. When the first byte
// that is not space (after a UTF-8 byte order mark) is '{', the content is
// export JSON lines if its first line is an object with a "metric" key, and
// a query response if it has a "status" key; a '{' followed by neither is
// taken as JSON lines when "metric" appears anywhere, so that ReadExportJSONL
// reports where the first line is broken. Anything else is CSV.
func SniffFormat(data []byte) FileFormat {
	data = bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\uFEFF")), " \t\r\n")
	if len(data) == 0 || data[0] != '{' {
		return FormatCSV
	}
	first := data
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		first = data[:i]
	}
	var p fastjson.Parser
	if v, err := p.ParseBytes(first); err == nil && v.Type() == fastjson.TypeObject {
		switch {
		case v.Exists("metric"):
			return FormatExportJSONL
		case v.Exists("status"):
			return FormatQueryResponse
		}
	}
	// A multi-line (pretty-printed) or broken object.
	switch {
	case bytes.Contains(data, []byte(`"status"`)):
		return FormatQueryResponse
	case bytes.Contains(data, []byte(`"metric"`)):
		return FormatExportJSONL
	}
	return FormatCSV
}
