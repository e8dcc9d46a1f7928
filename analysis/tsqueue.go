package analysis

// tsQueue is a FIFO of strictly increasing unix-millisecond timestamps, kept
// compactly: every timestamp after the oldest is stored as the zigzag
// uvarint of its delta-of-delta (the change in step), so a series on a fixed
// step costs one byte per timestamp instead of eight. Only the oldest and
// the newest timestamps are held in full; that is all a sliding window needs.
//
// All delta arithmetic is modular (uint64), so any int64 sequence that
// increases strictly is reproduced exactly.
type tsQueue struct {
	buf  []byte // ring of encoded deltas-of-deltas
	head int    // index of the first unread byte
	size int    // bytes held

	count int    // timestamps held
	first int64  // oldest timestamp held
	last  int64  // newest timestamp held
	fd    uint64 // delta of first from its predecessor, as encoded (decoder state)
	ld    uint64 // delta of last from its predecessor, as encoded (encoder state)
}

// len returns the number of timestamps held.
func (q *tsQueue) len() int { return q.count }

// oldest returns the oldest timestamp held; the queue must not be empty.
func (q *tsQueue) oldest() int64 { return q.first }

// push appends t, which must be greater than every timestamp held.
func (q *tsQueue) push(t int64) {
	if q.count == 0 {
		q.first, q.last, q.fd, q.ld = t, t, 0, 0
		q.head, q.size = 0, 0
		q.count = 1
		return
	}
	d := uint64(t) - uint64(q.last)
	dod := int64(d - q.ld)
	z := uint64(dod<<1) ^ uint64(dod>>63)
	for z >= 0x80 {
		q.putByte(byte(z) | 0x80)
		z >>= 7
	}
	q.putByte(byte(z))
	q.ld, q.last = d, t
	q.count++
}

// pop drops the oldest timestamp; the queue must not be empty.
func (q *tsQueue) pop() {
	q.count--
	if q.count == 0 {
		q.head, q.size = 0, 0
		return
	}
	var z uint64
	for shift := uint(0); ; shift += 7 {
		b := q.buf[q.head]
		q.head++
		if q.head == len(q.buf) {
			q.head = 0
		}
		q.size--
		z |= uint64(b&0x7f) << shift
		if b < 0x80 {
			break
		}
	}
	dod := int64(z>>1) ^ -int64(z&1)
	q.fd += uint64(dod)
	q.first = int64(uint64(q.first) + q.fd)
}

func (q *tsQueue) putByte(b byte) {
	if q.size == len(q.buf) {
		q.grow()
	}
	i := q.head + q.size
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = b
	q.size++
}

// grow doubles the byte ring (at least 16 bytes) and unwraps it.
func (q *tsQueue) grow() {
	n := 2 * len(q.buf)
	if n < 16 {
		n = 16
	}
	nb := make([]byte, n)
	k := copy(nb, q.buf[q.head:])
	copy(nb[k:], q.buf[:q.head])
	q.buf, q.head = nb, 0
}
