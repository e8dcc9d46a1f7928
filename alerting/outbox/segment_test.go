package outbox

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

func TestSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var s spans
		naive := map[uint64]bool{}
		for range 30 {
			lo := uint64(rng.IntN(60))
			hi := lo + uint64(rng.IntN(8))
			s.add(lo, hi)
			for x := lo; x < hi; x++ {
				naive[x] = true
			}
			for i := 1; i < len(s); i++ {
				if s[i-1].hi >= s[i].lo || s[i].lo >= s[i].hi {
					t.Fatalf("round %d: spans %v not sorted, disjoint and apart", round, s)
				}
			}
			var end uint64
			for x := range uint64(70) {
				if s.contains(x) != naive[x] {
					t.Fatalf("round %d: contains(%d) = %v, want %v (%v)", round, x, s.contains(x), naive[x], s)
				}
				if naive[x] {
					end = x + 1
				}
			}
			if s.end() != end {
				t.Fatalf("round %d: end %d, want %d", round, s.end(), end)
			}
			a := uint64(rng.IntN(70))
			b := a + uint64(rng.IntN(20))
			var n uint64
			for x := a; x < b; x++ {
				if naive[x] {
					n++
				}
			}
			if got := s.covered(a, b); got != n {
				t.Fatalf("round %d: covered(%d, %d) = %d, want %d (%v)", round, a, b, got, n, s)
			}
		}
	}
}

// segmentBytes encodes a segment holding recs from seq first.
func segmentBytes(first uint64, recs ...string) []byte {
	b := appendHeader(nil, segMagic, first)
	for i, r := range recs {
		b = appendFrame(b, first+uint64(i), []byte(r))
	}
	return b
}

// FuzzSegmentReader: whatever the bytes, the reader does not panic or
// allocate past the input, and the records it reads, encoded again, are
// exactly the bytes before the offset where it says the segment stops
// being valid.
func FuzzSegmentReader(f *testing.F) {
	f.Add(segmentBytes(1))
	f.Add(segmentBytes(1, "a"))
	f.Add(segmentBytes(7, "one", "two", "three"))
	full := segmentBytes(42, `{"subject":"inferwatch.findings.anomaly"}`, "x")
	f.Add(full[:len(full)-1])
	f.Add(append(bytes.Clone(full), 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add([]byte("IWOUTBOX"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newSegmentReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			var bad *errBadTail
			if !errors.As(err, &bad) || bad.Offset != 0 {
				t.Fatalf("header error %v, want a bad tail at 0", err)
			}
			return
		}
		enc := appendHeader(nil, segMagic, r.first)
		valid := int64(len(data))
		for {
			seq, p, err := r.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var bad *errBadTail
				if !errors.As(err, &bad) || bad.Offset != r.off {
					t.Fatalf("error %v at offset %d, want a bad tail there", err, r.off)
				}
				valid = bad.Offset
				break
			}
			if int64(cap(r.buf)) > int64(len(data)) {
				t.Fatalf("buffer of %d bytes for %d bytes of input", cap(r.buf), len(data))
			}
			enc = appendFrame(enc, seq, p)
		}
		if valid > int64(len(data)) || !bytes.Equal(enc, data[:valid]) {
			t.Fatalf("re-encoded records differ from the %d valid bytes of %d", valid, len(data))
		}
	})
}

// FuzzParseAcks: the entries read, encoded again, are exactly the bytes
// before the first damaged one.
func FuzzParseAcks(f *testing.F) {
	log := appendHeader(nil, ackMagic, 0)
	log = appendAckEntry(log, 0, 5)
	log = appendAckEntry(log, 7, 9)
	f.Add(log)
	f.Add(log[:len(log)-3])
	f.Add([]byte("IWOBXACK"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, bad := parseAcks(data)
		valid := len(data)
		if bad != nil {
			valid = int(bad.Offset)
		}
		if bad != nil && bad.Offset == 0 {
			if len(entries) != 0 {
				t.Fatalf("entries %v from a bad header", entries)
			}
			return
		}
		enc := bytes.Clone(data[:min(headerSize, len(data))])
		for _, e := range entries {
			if e.lo >= e.hi {
				t.Fatalf("empty entry %v", e)
			}
			enc = appendAckEntry(enc, e.lo, e.hi)
		}
		if !bytes.Equal(enc, data[:valid]) {
			t.Fatalf("re-encoded entries differ from the %d valid bytes of %d", valid, len(data))
		}
	})
}
