package writeback

import (
	"github.com/VictoriaMetrics/easyproto"
	"github.com/golang/snappy"

	"github.com/inferwatch/inferwatch/ingest"
)

// appendImport appends ss to dst in VictoriaMetrics' /api/v1/import
// format, one JSON line per at most ingest.ImportLinePoints samples of a
// series:
//
//	{"metric":{"__name__":"anomaly_score","for":"ttft","group":"latency"},"values":[0.4,1.7],"timestamps":[1700000000000,1700000015000]}
func appendImport(dst []byte, ss []*series) []byte {
	for _, s := range ss {
		for i := 0; i < len(s.t); i += ingest.ImportLinePoints {
			j := min(i+ingest.ImportLinePoints, len(s.t))
			dst = ingest.AppendImportJSONL(dst, ingest.Series{Labels: s.labels, Timestamps: s.t[i:j], Values: s.v[i:j]})
		}
	}
	return dst
}

var marshalers easyproto.MarshalerPool

// appendWriteRequest appends ss to dst as a Prometheus remote-write 1.0
// WriteRequest, uncompressed:
//
//	message WriteRequest { repeated TimeSeries timeseries = 1; }
//	message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	message Label        { string name = 1; string value = 2; }
//	message Sample       { double value = 1; int64 timestamp = 2; }
//
// The labels of each series are sorted by name, as the specification asks.
func appendWriteRequest(dst []byte, ss []*series) []byte {
	m := marshalers.Get()
	wr := m.MessageMarshaler()
	for _, s := range ss {
		ts := wr.AppendMessage(1)
		for _, l := range s.labels {
			lm := ts.AppendMessage(1)
			lm.AppendString(1, l.Name)
			lm.AppendString(2, l.Value)
		}
		for i, t := range s.t {
			sm := ts.AppendMessage(2)
			sm.AppendDouble(1, s.v[i])
			sm.AppendInt64(2, t)
		}
	}
	dst = m.Marshal(dst)
	marshalers.Put(m)
	return dst
}

// encodeRemoteWrite is the body of a remote-write request for ss: the
// WriteRequest compressed with snappy's block format.
func encodeRemoteWrite(ss []*series) []byte {
	raw := appendWriteRequest(nil, ss)
	return snappy.Encode(nil, raw)
}
