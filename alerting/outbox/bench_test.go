package outbox_test

import (
	"bytes"
	"testing"

	"github.com/inferwatch/inferwatch/alerting/outbox"
)

// BenchmarkAppend: one 1 KiB record per Append, each fsynced before it
// returns; the figure that matters is appends/s on the disk it runs on.
func BenchmarkAppend(b *testing.B) {
	ob, _ := open(b, outbox.Options{Dir: b.TempDir()})
	rec := bytes.Repeat([]byte("x"), 1024)
	for b.Loop() {
		seq, err := ob.Append(rec)
		if err != nil {
			b.Fatal(err)
		}
		if err := ob.Ack(seq); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// BenchmarkCycle1000: what a cycle of 1,000 findings costs the outbox as
// the Publisher uses it: one Append of 1,000 records of 1 KiB (one fsync),
// then an Ack for each as the broker acknowledges it.
func BenchmarkCycle1000(b *testing.B) {
	ob, _ := open(b, outbox.Options{Dir: b.TempDir()})
	recs := make([][]byte, 1000)
	for i := range recs {
		recs[i] = bytes.Repeat([]byte("x"), 1024)
	}
	for b.Loop() {
		first, err := ob.Append(recs...)
		if err != nil {
			b.Fatal(err)
		}
		for i := range uint64(len(recs)) {
			if err := ob.Ack(first + i); err != nil {
				b.Fatal(err)
			}
		}
	}
}
