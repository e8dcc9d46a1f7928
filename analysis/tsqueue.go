package analysis

// tsQueue is a FIFO of strictly increasing unix-millisecond timestamps, kept
// compactly: only the oldest and the newest are held in full, and each one
// in between as its delta-of-delta (the change in step). A change of step is
// stored as the zigzag uvarint of the delta-of-delta (never 0, so its first
// byte is never 0); a stretch of unchanged steps as a run token, a 0 byte
// followed by the length of the run (1 to 255). A series on a fixed step
// therefore costs two bytes per 255 timestamps, and popping a timestamp off
// a run is a decrement.
//
// All delta arithmetic is modular (uint64), so any int64 sequence that
// increases strictly is reproduced exactly.
type tsQueue struct {
	buf  []byte // ring of tokens
	head int    // index of the first unread byte
	size int    // bytes held
	run  int    // 1 + index of the length byte of the last token when it is a run; 0 otherwise

	count int    // timestamps held
	first int64  // oldest timestamp held
	last  int64  // newest timestamp held
	fd    uint64 // delta of first from its predecessor, as encoded (decoder state)
	ld    uint64 // delta of last from its predecessor, as encoded (encoder state)
}

// maxRun is the longest run a run token holds.
const maxRun = 255

// len returns the number of timestamps held.
func (q *tsQueue) len() int { return q.count }

// oldest returns the oldest timestamp held; the queue must not be empty.
func (q *tsQueue) oldest() int64 { return q.first }

// push appends t, which must be greater than every timestamp held.
func (q *tsQueue) push(t int64) {
	if q.count == 0 {
		q.first, q.last, q.fd, q.ld = t, t, 0, 0
		q.head, q.size, q.run = 0, 0, 0
		q.count = 1
		return
	}
	d := uint64(t) - uint64(q.last)
	q.count++
	q.last = t
	if d == q.ld {
		if q.run > 0 && q.buf[q.run-1] < maxRun {
			q.buf[q.run-1]++
			return
		}
		q.putByte(0)
		q.putByte(1)
		q.run = q.tail()
		return
	}
	dod := int64(d - q.ld)
	z := uint64(dod<<1) ^ uint64(dod>>63)
	for z >= 0x80 {
		q.putByte(byte(z) | 0x80)
		z >>= 7
	}
	q.putByte(byte(z))
	q.ld, q.run = d, 0
}

// tail returns 1 + the index of the last byte held.
func (q *tsQueue) tail() int {
	i := q.head + q.size
	if i > len(q.buf) {
		i -= len(q.buf)
	}
	return i
}

// pop drops the oldest timestamp; the queue must not be empty.
func (q *tsQueue) pop() {
	q.count--
	if q.count == 0 {
		q.head, q.size, q.run = 0, 0, 0
		return
	}
	h := q.head
	if q.buf[h] == 0 { // a run: the step is unchanged
		c := h + 1
		if c == len(q.buf) {
			c = 0
		}
		q.buf[c]--
		if q.buf[c] == 0 {
			q.head = c + 1
			if q.head == len(q.buf) {
				q.head = 0
			}
			q.size -= 2
			if q.size == 0 {
				q.run = 0
			}
		}
		q.first = int64(uint64(q.first) + q.fd)
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

// slideRun returns how many of the timestamps t, at most limit, can join
// the queue by slide: each one step after the one before (the first one
// step after the newest held), and each leaving a window of win ms with
// exactly the oldest timestamp held gone. That is the common case of a
// detector's window on a regular step, checked once for a run of samples:
// the queue must hold a run of unchanged steps at both ends, on that step,
// with room for the run's samples in the runs' lengths.
func (q *tsQueue) slideRun(t []int64, win uint64, limit int) int {
	if q.count < 2 || q.buf[q.head] != 0 || q.run == 0 {
		return 0
	}
	hc := q.headRun()
	room := min(int(q.buf[hc])-1, maxRun-int(q.buf[q.run-1]))
	if hc == q.run-1 {
		// One run holds every step: a timestamp popped off its head and
		// one pushed onto its tail leave its length as it is.
		room = len(t)
	}
	end := min(len(t), room, limit)
	step, first, fd := q.ld, q.first, q.fd
	if fd != step || end <= 0 {
		return 0
	}
	if t0 := t[0]; t0 <= q.last || uint64(t0)-uint64(q.last) != step ||
		uint64(t0)-uint64(first) <= win || uint64(t0)-uint64(int64(uint64(first)+fd)) > win {
		return 0
	}
	for j := 1; j < end; j++ {
		if t[j] <= t[j-1] || uint64(t[j])-uint64(t[j-1]) != step {
			return j
		}
	}
	return end
}

// slide pops the m oldest timestamps and pushes m that slideRun allowed,
// the newest of them last: the runs' lengths move, no token is written.
func (q *tsQueue) slide(m int, last int64) {
	q.buf[q.headRun()] -= byte(m)
	q.buf[q.run-1] += byte(m)
	q.first = int64(uint64(q.first) + uint64(m)*q.fd)
	q.last = last
}

// headRun returns the index of the length byte of the run at the head.
func (q *tsQueue) headRun() int {
	hc := q.head + 1
	if hc == len(q.buf) {
		hc = 0
	}
	return hc
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
	if q.run > 0 {
		r := q.run - 1 - q.head
		if r < 0 {
			r += len(q.buf)
		}
		q.run = r + 1
	}
	q.buf, q.head = nb, 0
}
