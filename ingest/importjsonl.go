package ingest

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendImportJSONL appends s to dst as one line of the VictoriaMetrics
// /api/v1/import JSON-lines format (the format /api/v1/export writes):
//
//	{"metric":{"__name__":"up","job":"x"},"values":[1,0],"timestamps":[1700000000000,1700000015000]}
//
// Non-finite values are written as null, which VictoriaMetrics skips.
func AppendImportJSONL(dst []byte, s Series) []byte {
	dst = append(dst, `{"metric":{`...)
	for i, l := range s.Labels {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, l.Name)
		dst = append(dst, ':')
		dst = appendJSONString(dst, l.Value)
	}
	dst = append(dst, `},"values":[`...)
	for i, v := range s.Values {
		if i > 0 {
			dst = append(dst, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			dst = append(dst, "null"...)
			continue
		}
		dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
	}
	dst = append(dst, `],"timestamps":[`...)
	for i, t := range s.Timestamps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, t, 10)
	}
	return append(dst, "]}\n"...)
}

// ImportLinePoints is the most samples WriteImportJSONL puts on one line.
//
// VictoriaMetrics reads /api/v1/import in blocks of 64 KiB and swaps its
// read buffer with its parser's between blocks; when the unparsed tail of a
// line longer than a block exactly fills the other buffer, the next read
// gets no room and the whole import fails with "cannot read vmimport data:
// no forward progress made". Lines of at most 1,000 samples (under 40 KB
// even with 24-character values) never reach a block's size.
const ImportLinePoints = 1000

// WriteImportJSONL writes each series as JSON lines of at most
// ImportLinePoints samples (see AppendImportJSONL); VictoriaMetrics joins
// the lines of one series as it stores them.
func WriteImportJSONL(w io.Writer, series ...Series) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for _, s := range series {
		for i := 0; i < len(s.Values) || i == 0; i += ImportLinePoints {
			j := min(i+ImportLinePoints, len(s.Values))
			part := Series{Labels: s.Labels, Timestamps: s.Timestamps[i:j], Values: s.Values[i:j]}
			buf = AppendImportJSONL(buf[:0], part)
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// appendJSONString appends s as a JSON string. Control characters, quotes
// and backslashes are escaped; valid UTF-8 is kept as is and invalid bytes
// become U+FFFD, as encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
