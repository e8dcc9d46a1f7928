//go:build unix

package outbox_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/alerting/outbox"
)

const crashDirEnv = "INFERWATCH_OUTBOX_CRASH_DIR"

// crashOptions are the options both the writer and the checker use: small
// segments, so that segments are started and deleted while it runs.
func crashOptions(dir string) outbox.Options {
	return outbox.Options{Dir: dir, MaxBytes: 1 << 30, SegmentBytes: 512}
}

// TestMain makes the test binary the crash writer when TestSIGKILL starts
// it as one (crashDirEnv set), and runs the tests otherwise.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashWriter(dir)
	}
	os.Exit(m.Run())
}

// crashWriter is the process TestSIGKILL kills: it appends batches of 1 to
// 3 records to a fresh outbox in dir and acknowledges some of them, at
// once or a few batches later, and prints each step: "A first n" after an
// Append returned, "P seq…" before an Ack and "K seq…" after it returned.
// It runs until it is killed.
func crashWriter(dir string) {
	b, err := outbox.Open(crashOptions(dir))
	if err != nil {
		fmt.Println("E", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	var batches [][]uint64
	for c, i := 0, 0; ; i++ {
		k := i%3 + 1
		recs := make([][]byte, k)
		for j := range recs {
			recs[j] = rec(c + j)
		}
		first, err := b.Append(recs...)
		if err != nil || first != uint64(c+1) {
			fmt.Println("E append", first, err)
			os.Exit(2)
		}
		c += k
		fmt.Fprintf(out, "A %d %d\n", first, k)
		out.Flush()
		var seqs []uint64
		for j := range k {
			seqs = append(seqs, first+uint64(j))
		}
		batches = append(batches, seqs)
		var ack []uint64
		switch {
		case i%2 == 0:
			ack = seqs
		case i%5 == 1 && i >= 5:
			ack = batches[i-4]
		default:
			continue
		}
		list := strings.Trim(fmt.Sprint(ack), "[]")
		fmt.Fprintf(out, "P %s\n", list)
		out.Flush()
		if err := b.Ack(ack...); err != nil {
			fmt.Println("E ack", err)
			os.Exit(2)
		}
		fmt.Fprintf(out, "K %s\n", list)
		out.Flush()
	}
}

// TestSIGKILL kills a process that appends and acknowledges, at several
// points, and opens what it left: every record it was told is appended
// and that it did not begin to acknowledge is there, intact and in order;
// none it was told is acknowledged is offered again.
func TestSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, lines := range []int{20, 300, 2000} {
		t.Run(strconv.Itoa(lines), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// acking: the writer may have acknowledged them or not.
			appended, acking, acked := map[uint64]bool{}, map[uint64]bool{}, map[uint64]bool{}
			// Kill it after some lines, then read what it wrote before it
			// died: a "P" line is written before its Ack starts.
			sc := bufio.NewScanner(stdout)
			for n := 0; sc.Scan(); n++ {
				if n == lines {
					if err := cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
				}
				f := strings.Fields(sc.Text())
				switch f[0] {
				case "A":
					first, _ := strconv.ParseUint(f[1], 10, 64)
					k, _ := strconv.Atoi(f[2])
					for j := range uint64(k) {
						appended[first+j] = true
					}
				case "P", "K":
					for _, s := range f[1:] {
						seq, _ := strconv.ParseUint(s, 10, 64)
						acking[seq] = true
						acked[seq] = acked[seq] || f[0] == "K"
					}
				default:
					t.Fatalf("the writer failed: %s", sc.Text())
				}
			}
			_ = cmd.Wait() // killed: the error says so
			if len(appended) == 0 {
				t.Fatal("the writer appended nothing")
			}

			b, e := open(t, crashOptions(dir))
			rs, err := b.Pending()
			if err != nil {
				t.Fatal(err)
			}
			got := map[uint64]bool{}
			var prev uint64
			for _, r := range rs {
				if r.Seq <= prev || string(r.Data) != string(rec(int(r.Seq)-1)) {
					t.Fatalf("record %d (after %d) holds %q, want %q in order", r.Seq, prev, r.Data, rec(int(r.Seq)-1))
				}
				prev = r.Seq
				got[r.Seq] = true
				if acked[r.Seq] {
					t.Errorf("record %d was acknowledged before the kill and is offered again", r.Seq)
				}
			}
			var missing []uint64
			for seq := range appended {
				if !acking[seq] && !got[seq] {
					missing = append(missing, seq)
				}
			}
			if len(missing) > 0 {
				slices.Sort(missing)
				t.Fatalf("%d records appended and not acknowledged before the kill are missing: %v", len(missing), missing)
			}
			t.Logf("killed after line %d: %d records appended, %d acknowledged; %d pending after reopening, in %d segments, %d bytes; corrupt tails %d",
				lines, len(appended), len(acked), len(rs), len(segments(t, dir)), b.Bytes(), e.counter("inferwatch_outbox_corrupt_total"))
		})
	}
}
