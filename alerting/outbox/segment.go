package outbox

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The on-disk format. A segment file, named by the sequence number of its
// first record as 20 decimal digits and ".seg", is a header followed by
// frames, all integers little-endian:
//
//	header: magic "IWOUTBOX" | version uint32 (1) | first seq uint64 | CRC uint32 of the 20 bytes before it
//	frame:  length uint32 (> 0) | CRC uint32 | payload (length bytes)
//
// A frame's CRC is the masked CRC-32C of its length, its sequence number
// (first seq + its index, 8 bytes) and its payload, so a frame copied to
// another place, a zero-filled tail and a torn write are all told apart
// from a record. The acknowledgement log ("acks") is a header of the same
// shape with magic "IWOBXACK" and first seq 0, followed by entries
//
//	entry: lo uint64 | hi uint64 | CRC uint32 of the 16 bytes before it
//
// each saying that the records lo ≤ seq < hi are done.
const (
	segMagic      = "IWOUTBOX"
	ackMagic      = "IWOBXACK"
	formatVersion = 1

	headerSize   = 24
	frameHeader  = 8
	ackEntrySize = 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskCRC keeps a CRC of data that holds CRCs (or zeros) from being a
// valid CRC itself (the LevelDB/Snappy masking).
func maskCRC(c uint32) uint32 { return ((c >> 15) | (c << 17)) + 0xa282ead8 }

func frameCRC(seq uint64, payload []byte) uint32 {
	var b [12]byte
	binary.LittleEndian.PutUint32(b[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint64(b[4:12], seq)
	c := crc32.Update(0, castagnoli, b[:])
	return maskCRC(crc32.Update(c, castagnoli, payload))
}

// appendHeader appends a file header with magic and first seq to b.
func appendHeader(b []byte, magic string, first uint64) []byte {
	start := len(b)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, formatVersion)
	b = binary.LittleEndian.AppendUint64(b, first)
	return binary.LittleEndian.AppendUint32(b, maskCRC(crc32.Checksum(b[start:], castagnoli)))
}

// parseHeader checks a file header and returns its first seq.
func parseHeader(h []byte, magic string) (uint64, error) {
	if len(h) < headerSize {
		return 0, fmt.Errorf("header is %d bytes, want %d", len(h), headerSize)
	}
	h = h[:headerSize]
	if string(h[:8]) != magic {
		return 0, fmt.Errorf("magic is %q, want %q", h[:8], magic)
	}
	if c := binary.LittleEndian.Uint32(h[20:]); c != maskCRC(crc32.Checksum(h[:20], castagnoli)) {
		return 0, errors.New("header CRC mismatch")
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != formatVersion {
		return 0, fmt.Errorf("format version %d, this inferwatch reads version %d", v, formatVersion)
	}
	return binary.LittleEndian.Uint64(h[12:]), nil
}

// appendFrame appends the frame of one record to b.
func appendFrame(b []byte, seq uint64, payload []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, frameCRC(seq, payload))
	return append(b, payload...)
}

// frameSize is the bytes a record of n bytes takes in a segment.
func frameSize(n int) int64 { return frameHeader + int64(n) }

// errBadTail reports where a segment stops being valid and why; everything
// before Offset is intact.
type errBadTail struct {
	Offset int64
	Reason string
}

func (e *errBadTail) Error() string { return fmt.Sprintf("%s at byte %d", e.Reason, e.Offset) }

// segmentReader reads the records of one segment in order. It never
// trusts a length beyond the bytes the segment holds.
type segmentReader struct {
	r     *bufio.Reader
	size  int64 // bytes in the segment
	off   int64 // offset of the next frame
	first uint64
	seq   uint64 // seq of the next frame
	buf   []byte
}

// newSegmentReader reads and checks the header of a segment of size bytes.
func newSegmentReader(r io.Reader, size int64) (*segmentReader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var h [headerSize]byte
	n, err := io.ReadFull(br, h[:])
	if err != nil {
		return nil, &errBadTail{Offset: 0, Reason: fmt.Sprintf("incomplete header (%d of %d bytes)", n, headerSize)}
	}
	first, err := parseHeader(h[:], segMagic)
	if err != nil {
		return nil, &errBadTail{Offset: 0, Reason: err.Error()}
	}
	return &segmentReader{r: br, size: size, off: headerSize, first: first, seq: first}, nil
}

// next returns the next record's seq and payload (valid until the next
// call), io.EOF at a clean end, or an *errBadTail where the segment stops
// being valid.
func (s *segmentReader) next() (uint64, []byte, error) {
	if s.off == s.size {
		return 0, nil, io.EOF
	}
	bad := func(reason string) (uint64, []byte, error) {
		return 0, nil, &errBadTail{Offset: s.off, Reason: reason}
	}
	if s.size-s.off < frameHeader {
		return bad(fmt.Sprintf("incomplete frame header (%d bytes)", s.size-s.off))
	}
	var h [frameHeader]byte
	if _, err := io.ReadFull(s.r, h[:]); err != nil {
		return bad("reading frame header: " + err.Error())
	}
	n := int64(binary.LittleEndian.Uint32(h[0:4]))
	switch {
	case n == 0:
		return bad("zero-length frame")
	case n > s.size-s.off-frameHeader:
		return bad(fmt.Sprintf("frame of %d bytes runs past the end (%d bytes left)", n, s.size-s.off-frameHeader))
	}
	if int64(cap(s.buf)) < n {
		s.buf = make([]byte, n)
	}
	s.buf = s.buf[:n]
	if _, err := io.ReadFull(s.r, s.buf); err != nil {
		return bad("reading frame: " + err.Error())
	}
	if binary.LittleEndian.Uint32(h[4:8]) != frameCRC(s.seq, s.buf) {
		return bad("CRC mismatch")
	}
	seq := s.seq
	s.seq++
	s.off += frameHeader + n
	return seq, s.buf, nil
}

// appendAckEntry appends an acknowledgement entry for [lo, hi) to b.
func appendAckEntry(b []byte, lo, hi uint64) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint64(b, lo)
	b = binary.LittleEndian.AppendUint64(b, hi)
	return binary.LittleEndian.AppendUint32(b, maskCRC(crc32.Checksum(b[start:], castagnoli)))
}

// parseAcks reads an acknowledgement log: its entries up to the first one
// that is incomplete or damaged, and where that one starts.
func parseAcks(data []byte) ([]span, *errBadTail) {
	if _, err := parseHeader(data, ackMagic); err != nil {
		return nil, &errBadTail{Offset: 0, Reason: err.Error()}
	}
	var out []span
	for off := headerSize; off < len(data); off += ackEntrySize {
		e := data[off:]
		if len(e) < ackEntrySize {
			return out, &errBadTail{Offset: int64(off), Reason: fmt.Sprintf("incomplete entry (%d bytes)", len(e))}
		}
		if binary.LittleEndian.Uint32(e[16:20]) != maskCRC(crc32.Checksum(e[:16], castagnoli)) {
			return out, &errBadTail{Offset: int64(off), Reason: "CRC mismatch"}
		}
		lo, hi := binary.LittleEndian.Uint64(e[0:8]), binary.LittleEndian.Uint64(e[8:16])
		if lo >= hi {
			return out, &errBadTail{Offset: int64(off), Reason: fmt.Sprintf("empty range %d–%d", lo, hi)}
		}
		out = append(out, span{lo, hi})
	}
	return out, nil
}
