package ingest

import (
	"bufio"
	"io"
	"math"
	"strconv"
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
		dst = strconv.AppendQuote(dst, l.Name)
		dst = append(dst, ':')
		dst = strconv.AppendQuote(dst, l.Value)
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

// WriteImportJSONL writes each series as one JSON line (see AppendImportJSONL).
func WriteImportJSONL(w io.Writer, series ...Series) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for _, s := range series {
		buf = AppendImportJSONL(buf[:0], s)
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}
