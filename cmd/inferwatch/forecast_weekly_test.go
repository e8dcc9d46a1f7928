package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With --weekly, a file holding fifteen days of ten-minute data whose
// weekends are half as busy is forecast by a weekly model (alone or in a
// combination); without it the forecaster keeps a week and cannot be.
func TestForecastWeeklyFlag(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i := range 15 * 144 {
		lvl := 200.0
		if i/144%7 >= 5 {
			lvl = 100
		}
		v := lvl * (1 + 0.5*math.Sin(2*math.Pi*float64(i)/144)) * (1 + 0.02*rng.NormFloat64())
		fmt.Fprintf(&b, "%d,%g\n", 1_700_000_000+int64(i)*600, v)
	}
	file := filepath.Join(t.TempDir(), "weekly.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		weekly bool
	}{{nil, false}, {[]string{"--weekly"}, true}} {
		code, _, errOut := runCmd(t, context.Background(), append([]string{"forecast", "--input", file}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errOut)
		}
		_, after, _ := strings.Cut(errOut, ", model ")
		model, _, _ := strings.Cut(after, ", peak")
		if strings.Contains(model, "hw_weekly") != c.weekly {
			t.Errorf("%v: model %q; want a weekly one %v\n%s", c.args, model, c.weekly, errOut)
		}
	}
}
