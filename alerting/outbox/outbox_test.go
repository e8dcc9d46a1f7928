package outbox_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/VictoriaMetrics/metrics"

	"github.com/inferwatch/inferwatch/alerting/outbox"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type env struct {
	set  *metrics.Set
	logs *lockedBuffer
}

func open(t testing.TB, o outbox.Options) (*outbox.Outbox, env) {
	t.Helper()
	e := env{set: metrics.NewSet(), logs: &lockedBuffer{}}
	o.Metrics = e.set
	o.Logger = slog.New(slog.NewTextHandler(e.logs, nil))
	b, err := outbox.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, e
}

func (e env) counter(name string) uint64 { return e.set.GetOrCreateCounter(name).Get() }

// rec is the payload of record i in these tests.
func rec(i int) []byte { return fmt.Appendf(nil, "record %d %s", i, strings.Repeat("x", i%7)) }

func appendN(t testing.TB, b *outbox.Outbox, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := b.Append(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
}

// pendingOf returns the records b holds as "seq:payload" strings.
func pendingOf(t testing.TB, b *outbox.Outbox) []string {
	t.Helper()
	rs, err := b.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != b.Len() {
		t.Errorf("Pending has %d records, Len says %d", len(rs), b.Len())
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%d:%s", r.Seq, r.Data))
	}
	return out
}

// want lists records seq:rec(seq-1) for each seq given, as appendN(0, …)
// numbers them.
func want(seqs ...int) []string {
	var out []string
	for _, s := range seqs {
		out = append(out, fmt.Sprintf("%d:%s", s, rec(s-1)))
	}
	return out
}

func seqRange(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

func segments(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

func TestAppendAckReplayReopen(t *testing.T) {
	dir := t.TempDir()
	b, _ := open(t, outbox.Options{Dir: dir})
	first, err := b.Append(rec(0), rec(1), rec(2))
	if err != nil || first != 1 {
		t.Fatalf("Append = %d, %v; want first seq 1", first, err)
	}
	appendN(t, b, 3, 10) // seqs 4..10
	if err := b.Ack(2, 5, 6); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(5); err != nil { // twice is harmless
		t.Fatal(err)
	}
	if err := b.Remove(1); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(11); err == nil || !strings.Contains(err.Error(), "never appended") {
		t.Errorf("Ack of a seq never appended: %v", err)
	}
	exp := want(3, 4, 7, 8, 9, 10)
	if got := pendingOf(t, b); !slices.Equal(got, exp) {
		t.Fatalf("pending %v, want %v", got, exp)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(rec(0)); err != outbox.ErrClosed {
		t.Errorf("Append after Close: %v", err)
	}

	b2, _ := open(t, outbox.Options{Dir: dir})
	if got := pendingOf(t, b2); !slices.Equal(got, exp) {
		t.Fatalf("after reopening: pending %v, want %v", got, exp)
	}
	// Sequence numbers go on where they stopped, even when the newest
	// records were acknowledged.
	if err := b2.Ack(9, 10); err != nil {
		t.Fatal(err)
	}
	b2.Close()
	b3, _ := open(t, outbox.Options{Dir: dir})
	if seq, err := b3.Append(rec(10)); err != nil || seq != 11 {
		t.Fatalf("Append after reopening = %d, %v; want seq 11", seq, err)
	}
	if got, exp := pendingOf(t, b3), want(3, 4, 7, 8, 11); !slices.Equal(got, exp) {
		t.Fatalf("pending %v, want %v", got, exp)
	}
}

func TestAppendRejectsEmptyRecords(t *testing.T) {
	b, _ := open(t, outbox.Options{Dir: t.TempDir()})
	if _, err := b.Append(rec(0), nil); err == nil || !strings.Contains(err.Error(), "record 2 of 2 is 0 bytes") {
		t.Fatalf("Append of an empty record: %v", err)
	}
	if b.Len() != 0 {
		t.Fatalf("%d records pending after a refused Append", b.Len())
	}
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestTornTail damages the last record of a segment in every way a crash
// or the disk can — cut at every byte offset, each byte flipped, zeros or
// garbage after it — and reopens: the records before it are kept, the
// damage is cut, logged and counted, and the outbox takes appends again.
func TestTornTail(t *testing.T) {
	base := t.TempDir()
	b, _ := open(t, outbox.Options{Dir: base})
	appendN(t, b, 0, 4)
	if err := b.Ack(2); err != nil {
		t.Fatal(err)
	}
	appendN(t, b, 4, 5) // the one to damage: seq 5
	b.Close()
	seg := segments(t, base)
	if len(seg) != 1 {
		t.Fatalf("segments %v, want one", seg)
	}
	orig, err := os.ReadFile(seg[0])
	if err != nil {
		t.Fatal(err)
	}
	lastStart := len(orig) - 8 - len(rec(4))

	// damaged: the damage is detected; whole: the last record is intact.
	f := func(name string, damage func([]byte) []byte, damaged, whole bool) {
		t.Helper()
		dir := copyDir(t, base)
		path := filepath.Join(dir, filepath.Base(seg[0]))
		if err := os.WriteFile(path, damage(bytes.Clone(orig)), 0o600); err != nil {
			t.Fatal(err)
		}
		b, e := open(t, outbox.Options{Dir: dir})
		exp := want(1, 3, 4)
		if whole {
			exp = want(1, 3, 4, 5)
		}
		if got := pendingOf(t, b); !slices.Equal(got, exp) {
			t.Fatalf("%s: pending %v, want %v", name, got, exp)
		}
		wantCorrupt := uint64(0)
		if damaged {
			wantCorrupt = 1
		}
		if got := e.counter("inferwatch_outbox_corrupt_total"); got != wantCorrupt {
			t.Fatalf("%s: corrupt_total %d, want %d; logs:\n%s", name, got, wantCorrupt, e.logs)
		}
		if damaged && !strings.Contains(e.logs.String(), "torn or corrupt record") {
			t.Fatalf("%s: the damage is not logged:\n%s", name, e.logs)
		}
		wantSize := int64(lastStart)
		if whole {
			wantSize = int64(len(orig))
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() != wantSize {
			t.Fatalf("%s: segment is %v bytes (%v), want %d", name, fi.Size(), err, wantSize)
		}
		seq, err := b.Append([]byte("after"))
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		b2, e2 := open(t, outbox.Options{Dir: dir})
		if got := pendingOf(t, b2); !slices.Equal(got, append(exp, fmt.Sprintf("%d:after", seq))) ||
			e2.counter("inferwatch_outbox_corrupt_total") != 0 {
			t.Fatalf("%s: after an append and a reopen: pending %v, corrupt %d",
				name, got, e2.counter("inferwatch_outbox_corrupt_total"))
		}
		b2.Close()
	}
	for cut := lastStart; cut < len(orig); cut++ {
		f(fmt.Sprintf("cut at %d", cut), func(d []byte) []byte { return d[:cut] }, cut > lastStart, false)
	}
	for i := lastStart; i < len(orig); i++ {
		f(fmt.Sprintf("byte %d flipped", i), func(d []byte) []byte { d[i] ^= 0x20; return d }, true, false)
	}
	for _, n := range []int{1, 7, 8, 9, 4096} {
		f(fmt.Sprintf("%d zeros after", n), func(d []byte) []byte { return append(d, make([]byte, n)...) }, true, true)
	}
	f("garbage after", func(d []byte) []byte { return append(d, "\x05\x00\x00\x00garbage"...) }, true, true)
	f("the last record copied after it", func(d []byte) []byte { return append(d, d[lastStart:]...) }, true, true)
	f("intact", func(d []byte) []byte { return d }, false, true)
}

// TestTornAckLog: an acknowledgement log cut anywhere in its last entry
// keeps the entries before it; the record whose acknowledgement was lost
// is offered again.
func TestTornAckLog(t *testing.T) {
	base := t.TempDir()
	b, _ := open(t, outbox.Options{Dir: base})
	appendN(t, b, 0, 4)
	if err := b.Ack(1); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(3); err != nil {
		t.Fatal(err)
	}
	b.Close()
	orig, err := os.ReadFile(filepath.Join(base, "acks"))
	if err != nil {
		t.Fatal(err)
	}
	for cut := len(orig) - 20; cut < len(orig); cut++ {
		dir := copyDir(t, base)
		if err := os.WriteFile(filepath.Join(dir, "acks"), orig[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		b, e := open(t, outbox.Options{Dir: dir})
		exp := want(2, 4)
		if cut < len(orig) {
			exp = want(2, 3, 4)
		}
		if got := pendingOf(t, b); !slices.Equal(got, exp) {
			t.Fatalf("ack log cut at %d of %d: pending %v, want %v", cut, len(orig), got, exp)
		}
		wantN := uint64(0) // cut between entries: nothing is damaged
		if (len(orig)-cut)%20 != 0 {
			wantN = 1
		}
		if got := e.counter("inferwatch_outbox_corrupt_total"); got != wantN {
			t.Fatalf("cut at %d: corrupt_total %d, want %d", cut, got, wantN)
		}
		b.Close()
	}
}

// TestSegmentCreationCutShort: a crash right after a new segment was
// created, before its header was whole, leaves a short file that is
// removed at the next start.
func TestSegmentCreationCutShort(t *testing.T) {
	dir := t.TempDir()
	b, _ := open(t, outbox.Options{Dir: dir})
	appendN(t, b, 0, 2)
	b.Close()
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.seg", 3)), []byte("IWOUT"), 0o600); err != nil {
		t.Fatal(err)
	}
	b2, e := open(t, outbox.Options{Dir: dir})
	if got := pendingOf(t, b2); !slices.Equal(got, want(1, 2)) || len(segments(t, dir)) != 1 ||
		e.counter("inferwatch_outbox_corrupt_total") != 1 {
		t.Fatalf("pending %v, segments %v, corrupt %d", got, segments(t, dir), e.counter("inferwatch_outbox_corrupt_total"))
	}
	if seq, err := b2.Append(rec(2)); err != nil || seq != 3 {
		t.Fatalf("Append = %d, %v", seq, err)
	}
}

// TestDamagedHeaderMovedAside: a segment whose header is damaged is not
// read, not deleted either: it is renamed, logged and counted.
func TestDamagedHeaderMovedAside(t *testing.T) {
	dir := t.TempDir()
	b, _ := open(t, outbox.Options{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 100})
	appendN(t, b, 0, 12)
	b.Close()
	seg := segments(t, dir)
	if len(seg) < 3 {
		t.Fatalf("segments %v, want several", seg)
	}
	data, _ := os.ReadFile(seg[1])
	data[3] = 'X'
	os.WriteFile(seg[1], data, 0o600)
	b2, e := open(t, outbox.Options{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 100})
	got := pendingOf(t, b2)
	if len(got) == 0 || len(got) >= 12 || e.counter("inferwatch_outbox_corrupt_total") != 1 {
		t.Fatalf("pending %v, corrupt %d", got, e.counter("inferwatch_outbox_corrupt_total"))
	}
	if _, err := os.Stat(seg[1] + ".corrupt"); err != nil {
		t.Fatalf("the damaged segment was not moved aside: %v; logs:\n%s", err, e.logs)
	}
}

// TestCompaction: segments whose records are all acknowledged are deleted,
// the newest one (appended to) excepted; a segment with one record pending
// stays; the acknowledgement log is rewritten when it grows long.
func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	b, e := open(t, outbox.Options{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 256})
	appendN(t, b, 0, 100)
	n := len(segments(t, dir))
	if n < 10 {
		t.Fatalf("%d segments, want at least 10", n)
	}
	// Everything but seq 2 is done.
	if err := b.Ack(1); err != nil {
		t.Fatal(err)
	}
	for s := uint64(3); s <= 100; s++ {
		if err := b.Ack(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := segments(t, dir); len(got) != 2 || !strings.HasSuffix(got[0], fmt.Sprintf("%020d.seg", 1)) {
		t.Fatalf("segments %v, want the first (seq 2 pending) and the newest", got)
	}
	if got := pendingOf(t, b); !slices.Equal(got, want(2)) {
		t.Fatalf("pending %v", got)
	}
	if err := b.Ack(2); err != nil {
		t.Fatal(err)
	}
	if got := segments(t, dir); len(got) != 1 {
		t.Fatalf("segments %v, want only the newest", got)
	}
	var size int64
	for _, s := range segments(t, dir) {
		fi, _ := os.Stat(s)
		size += fi.Size()
	}
	if b.Bytes() != size || !strings.Contains(metricsPage(e.set), fmt.Sprintf("inferwatch_outbox_bytes %d", size)) {
		t.Fatalf("Bytes() %d, on disk %d, metrics:\n%s", b.Bytes(), size, metricsPage(e.set))
	}

	// A long acknowledgement log is rewritten: acknowledge 20,000 records
	// out of order, two at a time.
	const m = 20_000
	first, err := b.Append(slices.Repeat([][]byte{[]byte("r")}, m)...)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < m; i += 2 {
		if err := b.Ack(first+m-1-i, first+m-2-i); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "acks"))
	if err != nil || fi.Size() > 24+20*(m/4) {
		t.Fatalf("the acknowledgement log is %d bytes (%v) after %d entries, want it rewritten", fi.Size(), err, m/2)
	}
	if b.Len() != 0 {
		t.Fatalf("%d pending", b.Len())
	}
	b.Close()
	b2, _ := open(t, outbox.Options{Dir: dir, MaxBytes: 1 << 20, SegmentBytes: 256})
	if b2.Len() != 0 {
		t.Fatalf("after reopening, %d pending", b2.Len())
	}
	if seq, err := b2.Append(rec(0)); err != nil || seq != first+m {
		t.Fatalf("Append = %d, %v; want %d", seq, err, first+m)
	}
}

func metricsPage(set *metrics.Set) string {
	var b strings.Builder
	set.WritePrometheus(&b)
	return b.String()
}

// TestSizeBound: past MaxBytes the oldest records are dropped, logged and
// counted; the disk use never exceeds the bound; what is kept is the
// newest, in order.
func TestSizeBound(t *testing.T) {
	dir := t.TempDir()
	const max = 2048
	b, e := open(t, outbox.Options{Dir: dir, MaxBytes: max, SegmentBytes: 256})
	for i := range 200 {
		if _, err := b.Append(rec(i)); err != nil {
			t.Fatal(err)
		}
		var size int64
		for _, s := range segments(t, dir) {
			fi, _ := os.Stat(s)
			size += fi.Size()
		}
		if size > max || size != b.Bytes() {
			t.Fatalf("after %d appends: %d bytes on disk, Bytes() %d, bound %d", i+1, size, b.Bytes(), max)
		}
	}
	got := pendingOf(t, b)
	dropped := e.counter("inferwatch_outbox_dropped_total")
	if len(got) == 0 || int(dropped)+len(got) != 200 {
		t.Fatalf("%d kept, %d dropped, want 200 in all", len(got), dropped)
	}
	if exp := want(seqRange(200-len(got)+1, 200)...); !slices.Equal(got, exp) {
		t.Fatalf("kept %v, want the newest %v", got, exp)
	}
	if !strings.Contains(e.logs.String(), "the outbox is full; dropped its oldest pending records") {
		t.Fatalf("drops not logged:\n%s", e.logs)
	}
	if _, err := b.Append(bytes.Repeat([]byte("x"), max)); err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Fatalf("Append of more than the bound: %v", err)
	}
	// Acknowledged records are not counted as dropped when their segment
	// makes room.
	if err := b.Remove(200); err != nil {
		t.Fatal(err)
	}
	appendN(t, b, 200, 400)
	if got := e.counter("inferwatch_outbox_dropped_total"); got-dropped+uint64(b.Len()) != 200 {
		t.Fatalf("dropped %d more, %d kept; want 200 in all", got-dropped, b.Len())
	}
}

func TestSecondOpenRefused(t *testing.T) {
	dir := t.TempDir()
	b, _ := open(t, outbox.Options{Dir: dir})
	_, err := outbox.Open(outbox.Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "in use by another process") ||
		!strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second Open: %v; want it refused, naming the directory and the holder", err)
	}
	b.Close()
	b2, err := outbox.Open(outbox.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open after the first Close: %v", err)
	}
	b2.Close()
}

func TestDirectoryNotUsable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "outbox")
	if _, err := outbox.Open(outbox.Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), dir) ||
		!strings.Contains(err.Error(), "inferwatch can write") {
		t.Fatalf("Open under a file: %v", err)
	}
	if _, err := outbox.Open(outbox.Options{}); err == nil {
		t.Fatal("Open without a directory")
	}
	if os.Geteuid() == 0 {
		return // permissions do not stop root
	}
	ro := t.TempDir()
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o700) })
	if _, err := outbox.Open(outbox.Options{Dir: ro}); err == nil || !strings.Contains(err.Error(), ro) ||
		!strings.Contains(err.Error(), "not writable") {
		t.Fatalf("Open of a read-only directory: %v", err)
	}
}

func TestSelfMetrics(t *testing.T) {
	b, e := open(t, outbox.Options{Dir: t.TempDir()})
	appendN(t, b, 0, 3)
	b.Ack(1)
	page := metricsPage(e.set)
	for _, s := range []string{
		"inferwatch_outbox_records_pending 2",
		"inferwatch_outbox_records_appended_total 3",
		"inferwatch_outbox_records_acknowledged_total 1",
		"inferwatch_outbox_dropped_total 0",
		"inferwatch_outbox_corrupt_total 0",
		"inferwatch_outbox_bytes ",
		"inferwatch_outbox_fsync_duration_seconds_bucket",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("metrics lack %q:\n%s", s, page)
		}
	}
}
