package outbox_test

import (
	"bytes"
	"fmt"
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

// BenchmarkCycle1000: what a cycle of 1,000 findings of 1 KiB costs the
// outbox: one Append of the 1,000 (one fsync), then their
// acknowledgements as the broker takes them, one Ack each or 256 at a
// time as the Publisher does.
func BenchmarkCycle1000(b *testing.B) {
	recs := make([][]byte, 1000)
	for i := range recs {
		recs[i] = bytes.Repeat([]byte("x"), 1024)
	}
	for _, every := range []int{1, 256} {
		b.Run(fmt.Sprintf("ack-%d", every), func(b *testing.B) {
			ob, _ := open(b, outbox.Options{Dir: b.TempDir()})
			seqs := make([]uint64, 0, every)
			for b.Loop() {
				first, err := ob.Append(recs...)
				if err != nil {
					b.Fatal(err)
				}
				for i := range uint64(len(recs)) {
					if seqs = append(seqs, first+i); len(seqs) == every || int(i) == len(recs)-1 {
						if err := ob.Ack(seqs...); err != nil {
							b.Fatal(err)
						}
						seqs = seqs[:0]
					}
				}
			}
		})
	}
}
