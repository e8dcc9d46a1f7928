// Package outbox is a local, append-only, fsynced log of records kept in
// one directory until they are acknowledged: what inferwatch has found but
// not yet handed to its broker survives a crash, a restart and an outage.
//
// Records are opaque bytes, each with a sequence number that grows by one
// per record and is never reused. Append returns once the records are on
// disk (the segment file fsynced, and its directory when the segment is
// new). Ack and Remove mark records done; the marks are written to an
// acknowledgement log without an fsync of their own, so a process killed
// right after an Ack keeps it (the kernel has it), and a machine that loses
// power may offer a record once more, which a broker that deduplicates by
// the record's identity drops. Segments whose records are all done are
// deleted. Replay offers the records that are not done, in order.
//
// The outbox is bounded: when an Append would take it past MaxBytes, the
// oldest segments are dropped, their pending records logged and counted,
// never silently. A record torn by a crash mid-write, or damaged on disk,
// fails its CRC: the segment is cut there, what comes before is kept, and
// the damage is logged and counted. One process at a time holds a
// directory, through an flock(2) on its LOCK file.
package outbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/inferwatch/inferwatch/internal/metricname"
)

// Defaults of Options.
const (
	DefaultMaxBytes     = 256 << 20
	DefaultSegmentBytes = 8 << 20
)

// Options configure an Outbox. Dir is required.
type Options struct {
	// Dir holds the outbox; it is created (0700) when missing.
	Dir string
	// MaxBytes bounds the bytes of the segment files (default
	// DefaultMaxBytes); past it the oldest records are dropped.
	MaxBytes int64
	// SegmentBytes is the size past which a new segment is started; it is
	// also how much an overflow drops at once. Default: DefaultSegmentBytes
	// or MaxBytes/8, whichever is smaller.
	SegmentBytes int64
	// Logger (nil: discard) and Metrics (nil: unregistered).
	Logger  *slog.Logger
	Metrics *metrics.Set
}

// Record is one record not yet acknowledged.
type Record struct {
	Seq  uint64
	Data []byte
}

// ErrClosed is returned by the methods of a closed Outbox.
var ErrClosed = errors.New("outbox is closed")

var errLocked = errors.New("locked")

// maxAckEntries is the length of the acknowledgement log past which it is
// rewritten with only what is still needed.
const maxAckEntries = 1 << 14

const (
	lockName = "LOCK"
	ackName  = "acks"
	segExt   = ".seg"
)

var segName = regexp.MustCompile(`^[0-9]{20}\.seg$`)

// Outbox is a durable queue of records in one directory. Its methods are
// safe for concurrent use.
type Outbox struct {
	o    Options
	log  *slog.Logger
	lock *os.File

	mu     sync.Mutex
	segs   []*segment // oldest first; the last one is appended to
	active *os.File   // append handle of the last segment; nil: none yet
	acks   *os.File   // the acknowledgement log, opened for appending
	// ackEntries counts the entries in the acknowledgement log, ackDirty
	// says some were written since its last fsync.
	ackEntries int
	ackDirty   bool
	done       spans  // acknowledged (or dropped) sequence numbers
	next       uint64 // seq of the next record
	broken     error  // set when a failed write left a segment in an unknown state
	closed     bool
	buf        []byte

	pending, size atomic.Int64

	appended, acked, dropped, corrupt *metrics.Counter
	fsync                             *metrics.PrometheusHistogram
}

// segment is one segment file.
type segment struct {
	first   uint64
	n       uint64 // records
	size    int64  // bytes
	pending uint64 // records not done
	path    string
}

func (s *segment) end() uint64 { return s.first + s.n }

// Open opens the outbox in o.Dir, creating it if needed, checks every
// segment (cutting a torn or corrupt tail), and holds the directory until
// Close. A directory that cannot be written or that another process holds
// is an error saying so.
func Open(o Options) (*Outbox, error) {
	if o.Dir == "" {
		return nil, errors.New("outbox: no directory given")
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = min(DefaultSegmentBytes, o.MaxBytes/8)
	}
	if o.MaxBytes < 2*headerSize+frameSize(1) || o.SegmentBytes <= headerSize || o.SegmentBytes > o.MaxBytes {
		return nil, fmt.Errorf("outbox %s: max bytes %d and segment bytes %d: want segment bytes above %d and at most the max bytes", o.Dir, o.MaxBytes, o.SegmentBytes, headerSize)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = metrics.NewSet()
	}
	b := &Outbox{o: o, log: o.Logger.With("outbox", o.Dir), next: 1}
	set := o.Metrics
	b.appended = set.GetOrCreateCounter("inferwatch_outbox_records_appended_total")
	b.acked = set.GetOrCreateCounter("inferwatch_outbox_records_acknowledged_total")
	b.dropped = set.GetOrCreateCounter("inferwatch_outbox_dropped_total")
	b.corrupt = set.GetOrCreateCounter("inferwatch_outbox_corrupt_total")
	b.fsync = set.GetOrCreatePrometheusHistogramExt("inferwatch_outbox_fsync_duration_seconds", metricname.FsyncBuckets())
	set.GetOrCreateGauge("inferwatch_outbox_records_pending", func() float64 { return float64(b.pending.Load()) })
	set.GetOrCreateGauge("inferwatch_outbox_bytes", func() float64 { return float64(b.size.Load()) })

	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("outbox: creating directory %s: %w; create it, or point the outbox at a directory inferwatch can write", o.Dir, err)
	}
	if err := b.takeLock(); err != nil {
		return nil, err
	}
	if err := b.load(); err != nil {
		b.releaseLock()
		return nil, err
	}
	b.log.Info("outbox opened", "records_pending", b.pending.Load(), "segments", len(b.segs),
		"bytes", b.size.Load(), "next_seq", b.next)
	return b, nil
}

// takeLock creates and locks Dir/LOCK and writes this process's id in it.
func (b *Outbox) takeLock() error {
	path := filepath.Join(b.o.Dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("outbox: directory %s is not writable (opening %s: %w); give inferwatch a directory it can write, or fix its permissions", b.o.Dir, lockName, err)
	}
	if err := lockFile(f); err != nil {
		holder := ""
		if pid, _ := io.ReadAll(io.LimitReader(f, 32)); len(bytes.TrimSpace(pid)) > 0 {
			holder = " (pid " + string(bytes.TrimSpace(pid)) + ")"
		}
		f.Close()
		if errors.Is(err, errLocked) {
			return fmt.Errorf("outbox: directory %s is in use by another process%s, which holds %s; stop it, or give each inferwatch its own outbox directory", b.o.Dir, holder, path)
		}
		return fmt.Errorf("outbox: locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	b.lock = f
	return nil
}

func (b *Outbox) releaseLock() {
	if b.lock != nil {
		_ = unlockFile(b.lock)
		_ = b.lock.Close()
		b.lock = nil
	}
}

// load reads the acknowledgement log and the segments, cuts damaged
// tails, rewrites the acknowledgement log and deletes the segments whose
// records are all done.
func (b *Outbox) load() error {
	if err := b.readAcks(); err != nil {
		return err
	}
	ents, err := os.ReadDir(b.o.Dir)
	if err != nil {
		return fmt.Errorf("outbox: reading directory %s: %w", b.o.Dir, err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			_ = os.Remove(filepath.Join(b.o.Dir, e.Name()))
		}
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && segName.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names) // fixed width: in seq order
	for i, name := range names {
		seg, err := b.checkSegment(filepath.Join(b.o.Dir, name), i == len(names)-1)
		if err != nil {
			return err
		}
		if seg == nil {
			continue
		}
		if len(b.segs) > 0 && seg.first < b.segs[len(b.segs)-1].end() {
			b.corrupt.Inc()
			b.log.Error("a segment overlaps the one before it; moving it aside", "segment", name,
				"first_seq", seg.first, "previous_end", b.segs[len(b.segs)-1].end())
			_ = os.Rename(seg.path, seg.path+".corrupt")
			continue
		}
		b.segs = append(b.segs, seg)
		b.next = max(b.next, seg.end())
	}
	b.next = max(b.next, b.done.end())
	var pending uint64
	var size int64
	for _, s := range b.segs {
		s.pending = s.n - b.done.covered(s.first, s.end())
		pending += s.pending
		size += s.size
	}
	b.pending.Store(int64(pending))
	b.size.Store(size)
	if err := b.rewriteAcks(); err != nil {
		return err
	}
	if n := len(b.segs); n > 0 {
		last := b.segs[n-1]
		f, err := os.OpenFile(last.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("outbox: opening %s to append: %w", last.path, err)
		}
		b.active = f
	}
	return b.compact()
}

// checkSegment reads a segment, cuts it where it stops being valid, and
// returns it; nil when nothing of it could be kept.
func (b *Outbox) checkSegment(path string, last bool) (*segment, error) {
	name := filepath.Base(path)
	want, _ := strconv.ParseUint(strings.TrimSuffix(name, segExt), 10, 64)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("outbox: opening segment %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("outbox: segment %s: %w", path, err)
	}
	seg := &segment{first: want, path: path}
	r, err := newSegmentReader(f, fi.Size())
	if err == nil && r.first != want {
		err = &errBadTail{Reason: fmt.Sprintf("header says first seq %d, the name %d", r.first, want)}
	}
	if err != nil {
		b.corrupt.Inc()
		if last && fi.Size() < headerSize {
			// A crash while the segment was being created.
			b.log.Warn("removing a segment whose creation was cut short", "segment", name, "bytes", fi.Size(), "err", err)
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("outbox: removing %s: %w", path, err)
			}
			return nil, nil
		}
		b.log.Error("a segment's header is damaged; moving it aside", "segment", name, "bytes", fi.Size(),
			"moved_to", name+".corrupt", "err", err)
		if err := os.Rename(path, path+".corrupt"); err != nil {
			return nil, fmt.Errorf("outbox: moving damaged segment %s aside: %w", path, err)
		}
		return nil, nil
	}
	for {
		_, _, err := r.next()
		if err == nil {
			continue
		}
		if err == io.EOF {
			break
		}
		var bad *errBadTail
		if !errors.As(err, &bad) {
			return nil, fmt.Errorf("outbox: reading segment %s: %w", path, err)
		}
		b.corrupt.Inc()
		b.log.Error("a segment ends in a torn or corrupt record; cutting it there and keeping the records before it",
			"segment", name, "records_kept", r.seq-r.first, "offset", bad.Offset,
			"bytes_discarded", fi.Size()-bad.Offset, "reason", bad.Reason)
		if err := f.Truncate(bad.Offset); err != nil {
			return nil, fmt.Errorf("outbox: cutting the damaged tail of %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("outbox: fsync of %s: %w", path, err)
		}
		fi, _ = f.Stat()
		break
	}
	seg.n = r.seq - r.first
	seg.size = fi.Size()
	return seg, nil
}

// readAcks reads the acknowledgement log into b.done; a damaged entry and
// everything after it are ignored (and the log rewritten by load).
func (b *Outbox) readAcks() error {
	path := filepath.Join(b.o.Dir, ackName)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("outbox: reading %s: %w", path, err)
	}
	entries, bad := parseAcks(data)
	for _, e := range entries {
		b.done.add(e.lo, e.hi)
	}
	if bad != nil {
		b.corrupt.Inc()
		b.log.Error("the acknowledgement log ends in a torn or corrupt entry; keeping the entries before it (records after it may be offered again)",
			"file", ackName, "entries_kept", len(entries), "offset", bad.Offset, "reason", bad.Reason)
	}
	return nil
}

// rewriteAcks replaces the acknowledgement log with one entry for
// everything before the oldest segment and the acknowledged ranges above
// it, durably, and opens it for appending.
func (b *Outbox) rewriteAcks() error {
	w := b.next
	if len(b.segs) > 0 {
		w = b.segs[0].first
	}
	var keep spans
	keep.add(0, w)
	for _, s := range b.done {
		if s.hi > w {
			keep.add(max(s.lo, w), s.hi)
		}
	}
	b.done = keep
	data := appendHeader(nil, ackMagic, 0)
	for _, s := range keep {
		data = appendAckEntry(data, s.lo, s.hi)
	}
	path := filepath.Join(b.o.Dir, ackName)
	tmp := path + ".tmp"
	if err := b.writeFileSync(tmp, data); err != nil {
		return fmt.Errorf("outbox: directory %s is not writable (writing %s: %w); give inferwatch a directory it can write, or fix its permissions", b.o.Dir, filepath.Base(tmp), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("outbox: replacing %s: %w", path, err)
	}
	if err := b.syncDir(); err != nil {
		return err
	}
	if b.acks != nil {
		_ = b.acks.Close()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("outbox: opening %s: %w", path, err)
	}
	b.acks, b.ackEntries, b.ackDirty = f, len(keep), false
	return nil
}

func (b *Outbox) writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := b.syncFile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (b *Outbox) syncFile(f *os.File) error {
	t := time.Now()
	err := f.Sync()
	b.fsync.UpdateDuration(t)
	return err
}

func (b *Outbox) syncDir() error {
	t := time.Now()
	err := syncDir(b.o.Dir)
	b.fsync.UpdateDuration(t)
	if err != nil {
		return fmt.Errorf("outbox: fsync of directory %s: %w", b.o.Dir, err)
	}
	return nil
}

// Append writes recs as consecutive records and returns the seq of the
// first, once they are on disk. A record must not be empty. When they
// would take the outbox past MaxBytes, the oldest segments are dropped
// first, logged and counted.
func (b *Outbox) Append(recs ...[]byte) (first uint64, err error) {
	var need int64
	for i, r := range recs {
		if len(r) == 0 || len(r) > math.MaxUint32 {
			return 0, fmt.Errorf("outbox %s: record %d of %d is %d bytes; want 1 to %d", b.o.Dir, i+1, len(recs), len(r), uint32(math.MaxUint32))
		}
		need += frameSize(len(r))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return 0, ErrClosed
	case b.broken != nil:
		return 0, b.broken
	case len(recs) == 0:
		return b.next, nil
	case headerSize+need > b.o.MaxBytes:
		return 0, fmt.Errorf("outbox %s: %d records of %d bytes in all do not fit in its %d bytes", b.o.Dir, len(recs), need, b.o.MaxBytes)
	}
	if n := len(b.segs); b.active == nil || b.segs[n-1].n > 0 && b.segs[n-1].size+need > b.o.SegmentBytes {
		if err := b.roll(); err != nil {
			return 0, err
		}
	}
	for b.size.Load()+need > b.o.MaxBytes && len(b.segs) > 1 {
		if err := b.dropOldest(); err != nil {
			return 0, err
		}
	}
	seg := b.segs[len(b.segs)-1]
	first = b.next
	buf := slices.Grow(b.buf[:0], int(need))
	for i, r := range recs {
		buf = appendFrame(buf, first+uint64(i), r)
	}
	if cap(buf) <= 4<<20 {
		b.buf = buf
	}
	if _, err := b.active.Write(buf); err != nil {
		return 0, b.undoWrite(seg, fmt.Errorf("outbox: writing %d records to %s: %w", len(recs), seg.path, err))
	}
	if err := b.syncFile(b.active); err != nil {
		return 0, b.undoWrite(seg, fmt.Errorf("outbox: fsync of %s: %w", seg.path, err))
	}
	k := uint64(len(recs))
	seg.n += k
	seg.size += need
	seg.pending += k
	b.next += k
	b.pending.Add(int64(k))
	b.size.Add(need)
	b.appended.Add(len(recs))
	return first, nil
}

// undoWrite cuts a segment back to what it held before a failed write;
// when that fails too, the outbox refuses further appends.
func (b *Outbox) undoWrite(seg *segment, err error) error {
	if terr := b.active.Truncate(seg.size); terr != nil {
		b.broken = fmt.Errorf("%w; cutting it back also failed (%v): reopen the outbox to recover", err, terr)
		return b.broken
	}
	return err
}

// roll starts a new segment at b.next, durably.
func (b *Outbox) roll() error {
	path := filepath.Join(b.o.Dir, fmt.Sprintf("%020d%s", b.next, segExt))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("outbox: creating segment %s: %w", path, err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(path)
		return err
	}
	if _, err := f.Write(appendHeader(nil, segMagic, b.next)); err != nil {
		return fail(fmt.Errorf("outbox: writing segment %s: %w", path, err))
	}
	if err := b.syncFile(f); err != nil {
		return fail(fmt.Errorf("outbox: fsync of %s: %w", path, err))
	}
	if err := b.syncDir(); err != nil {
		return fail(err)
	}
	if b.active != nil {
		_ = b.active.Close()
	}
	b.active = f
	b.segs = append(b.segs, &segment{first: b.next, size: headerSize, path: path})
	b.size.Add(headerSize)
	return b.compact()
}

// dropOldest drops the oldest segment to make room, saying how many
// pending records went with it.
func (b *Outbox) dropOldest() error {
	seg := b.segs[0]
	if seg.pending > 0 {
		b.dropped.Add(int(seg.pending))
		b.pending.Add(-int64(seg.pending))
		b.log.Error("the outbox is full; dropped its oldest pending records", "dropped", seg.pending,
			"first_seq", seg.first, "last_seq", seg.end()-1, "max_bytes", b.o.MaxBytes)
		seg.pending = 0
	}
	if err := b.writeAcks([]span{{seg.first, seg.end()}}); err != nil {
		return err
	}
	b.done.add(seg.first, seg.end())
	return b.compact()
}

// Ack marks records done. Seqs already done are ignored; a seq that was
// never appended is an error.
func (b *Outbox) Ack(seqs ...uint64) error {
	var runs []span
	for _, s := range seqs {
		if n := len(runs); n > 0 && runs[n-1].hi == s {
			runs[n-1].hi++
		} else {
			runs = append(runs, span{s, s + 1})
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mark(runs)
}

// Remove marks every record up to and including seq upTo done.
func (b *Outbox) Remove(upTo uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mark([]span{{0, upTo + 1}})
}

// mark records runs as done: in the acknowledgement log, in the segments'
// counts, then deletes the segments left with nothing pending.
func (b *Outbox) mark(runs []span) error {
	if b.closed {
		return ErrClosed
	}
	var fresh []span
	var n uint64
	for _, r := range runs {
		if r.hi > b.next {
			return fmt.Errorf("outbox %s: seq %d was never appended (the next is %d)", b.o.Dir, r.hi-1, b.next)
		}
		if b.done.covered(r.lo, r.hi) == r.hi-r.lo {
			continue
		}
		for _, s := range b.segs {
			if lo, hi := max(r.lo, s.first), min(r.hi, s.end()); lo < hi {
				k := hi - lo - b.done.covered(lo, hi)
				s.pending -= k
				n += k
			}
		}
		b.done.add(r.lo, r.hi)
		fresh = append(fresh, r)
	}
	if len(fresh) == 0 {
		return nil
	}
	b.pending.Add(-int64(n))
	b.acked.Add(int(n))
	if err := b.writeAcks(fresh); err != nil {
		return err
	}
	return b.compact()
}

// writeAcks appends entries to the acknowledgement log, without an fsync.
func (b *Outbox) writeAcks(runs []span) error {
	var data []byte
	for _, r := range runs {
		data = appendAckEntry(data, r.lo, r.hi)
	}
	if _, err := b.acks.Write(data); err != nil {
		return fmt.Errorf("outbox: writing to %s: %w", b.acks.Name(), err)
	}
	b.ackEntries += len(runs)
	b.ackDirty = true
	return nil
}

// compact deletes the segments, all but the last, whose records are all
// done, once the acknowledgements saying so are durable; and rewrites an
// acknowledgement log grown long.
func (b *Outbox) compact() error {
	var gone []*segment
	keep := b.segs[:0]
	for i, s := range b.segs {
		if s.pending == 0 && i < len(b.segs)-1 {
			gone = append(gone, s)
			continue
		}
		keep = append(keep, s)
	}
	clear(b.segs[len(keep):])
	b.segs = keep
	if len(gone) > 0 && b.ackDirty {
		if err := b.syncFile(b.acks); err != nil {
			return fmt.Errorf("outbox: fsync of %s: %w", b.acks.Name(), err)
		}
		b.ackDirty = false
	}
	for _, s := range gone {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("outbox: deleting segment %s: %w", s.path, err)
		}
		b.size.Add(-s.size)
	}
	if b.ackEntries > maxAckEntries {
		return b.rewriteAcks()
	}
	return nil
}

// Replay calls fn with each record not yet done, in order, and stops at
// the first error fn returns. data is valid during the call only. The
// outbox is held meanwhile: fn must not call its methods.
func (b *Outbox) Replay(fn func(seq uint64, data []byte) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	for _, s := range b.segs {
		if s.pending == 0 {
			continue
		}
		if err := b.replaySegment(s, fn); err != nil {
			return err
		}
	}
	return nil
}

func (b *Outbox) replaySegment(s *segment, fn func(uint64, []byte) error) error {
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("outbox: opening segment %s: %w", s.path, err)
	}
	defer f.Close()
	r, err := newSegmentReader(f, s.size)
	if err != nil {
		return fmt.Errorf("outbox: segment %s changed on disk: %w", s.path, err)
	}
	for range s.n {
		seq, data, err := r.next()
		if err != nil {
			return fmt.Errorf("outbox: segment %s changed on disk: %w", s.path, err)
		}
		if b.done.contains(seq) {
			continue
		}
		if err := fn(seq, data); err != nil {
			return err
		}
	}
	return nil
}

// Pending returns the records not yet done, in order.
func (b *Outbox) Pending() ([]Record, error) {
	var out []Record
	err := b.Replay(func(seq uint64, data []byte) error {
		out = append(out, Record{Seq: seq, Data: bytes.Clone(data)})
		return nil
	})
	return out, err
}

// Len is the number of records not yet done.
func (b *Outbox) Len() int { return int(b.pending.Load()) }

// Bytes is the size of the segment files.
func (b *Outbox) Bytes() int64 { return b.size.Load() }

// Dir is the outbox's directory.
func (b *Outbox) Dir() string { return b.o.Dir }

// Close makes the acknowledgements durable, closes the files and releases
// the directory. Calling it again does nothing.
func (b *Outbox) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var errs []error
	if b.acks != nil {
		if b.ackDirty {
			if err := b.syncFile(b.acks); err != nil {
				errs = append(errs, fmt.Errorf("outbox: fsync of %s: %w", b.acks.Name(), err))
			}
		}
		errs = append(errs, b.acks.Close())
	}
	if b.active != nil {
		errs = append(errs, b.active.Close())
	}
	b.releaseLock()
	return errors.Join(errs...)
}
