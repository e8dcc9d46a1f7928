package rules

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/analysis/nab"
)

func TestReplayNAB(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, minutes []int) {
		var b strings.Builder
		b.WriteString("timestamp,value\n")
		for i, m := range minutes {
			fmt.Fprintf(&b, "2014-04-10 %02d:%02d:00,%d\n", m/60, m%60, 10+i%3)
		}
		if err := os.WriteFile(filepath.Join(dir, "a", name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var even, back []int
	for m := range 1440 {
		even = append(even, m)
		back = append(back, m)
	}
	back[100], back[101] = 50, 51 // two rows step back, the first on line 102
	write("even.csv", even)
	write("back.csv", back)
	keys := []string{"a/back.csv", "a/even.csv"}
	done := 0
	runs, err := ReplayNAB(context.Background(), dir, keys, map[string][][2]int64{}, SeriesRule{Detector: "sigma"}, func() { done++ })
	if err != nil {
		t.Fatal(err)
	}
	if done != 2 || len(runs) != 2 || runs[0].Key != "a/back.csv" || runs[1].Key != "a/even.csv" {
		t.Fatalf("%d done, runs %d: want 2 in the order of the keys", done, len(runs))
	}
	if r := runs[0]; r.Behind != 2 || r.BehindLine != 102 || r.File.Rows() != 1440 || r.Category != "a" {
		t.Errorf("back.csv: %d behind from line %d, %d rows, category %q; want 2 from line 102, 1440 rows, a", r.Behind, r.BehindLine, r.File.Rows(), r.Category)
	}
	// A day of minutes spans 1439 minutes; the rule steps by the file's minute.
	if r := runs[1]; r.Behind != 0 || r.Days != 1439.0/1440 || r.Step.Minutes() != 1 || len(r.Scores) != 1440 {
		t.Errorf("even.csv: %d behind, %v days, step %v, %d scores; want 0, 1439/1440, 1m, 1440", r.Behind, r.Days, r.Step, len(r.Scores))
	}
}

// TestScoreNAB counts the corpus of the runs and scores them under each
// profile as nab.ScoreProfile does.
func TestScoreNAB(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for m := range 1440 {
		v := 10 + m%3
		if m == 1000 {
			v = 90
		}
		fmt.Fprintf(&b, "2014-04-10 %02d:%02d:00,%d\n", m/60, m%60, v)
	}
	for _, name := range []string{"x.csv", "y.csv"} {
		if err := os.WriteFile(filepath.Join(dir, "a", name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// x.csv's window holds the spike at row 1000; y.csv has no window, its spike a false positive.
	windows := map[string][][2]int64{"a/x.csv": {{time.Date(2014, 4, 10, 16, 30, 0, 0, time.UTC).UnixMilli(), time.Date(2014, 4, 10, 17, 0, 0, 0, time.UTC).UnixMilli()}}, "a/y.csv": nil}
	runs, err := ReplayNAB(context.Background(), dir, []string{"a/x.csv", "a/y.csv"}, windows, SeriesRule{Detector: "sigma"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ScoreNAB(runs, nab.Profiles())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 2 || rep.Rows != 2880 || rep.Windows != 1 || rep.Behind != 0 || len(rep.Profiles) != 3 {
		t.Fatalf("report %+v: want 2 files, 2880 rows, 1 window, 3 profiles", rep)
	}
	std, err := nab.ScoreProfile(nab.Profiles()[0], []nab.Run{runs[0].Run, runs[1].Run})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Profiles[0]; got.Name != std.Name || got.Own.Overall.TP != 1 || !reflect.DeepEqual(got, std) {
		t.Errorf("standard profile: %+v, want %+v with the spike found", got, std)
	}
}
