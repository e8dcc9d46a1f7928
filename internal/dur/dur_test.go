package dur

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{1500 * time.Millisecond, "1.5s"},
		{45 * time.Second, "45s"},
		{10 * time.Minute, "10m"},
		{61 * time.Second, "1m1s"},
		{90 * time.Minute, "1h30m"},
		{2 * time.Hour, "2h"},
		{24 * time.Hour, "1d"},
		{7 * 24 * time.Hour, "7d"},
		{25 * time.Hour, "25h"},
	} {
		if got := Format(c.d); got != c.want {
			t.Errorf("Format(%v) = %q, want %q", c.d, got, c.want)
		}
		if back, err := time.ParseDuration(c.want); err == nil && back != c.d {
			t.Errorf("Format(%v) = %q reads back as %v", c.d, c.want, back)
		}
	}
}

func TestApprox(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{1400 * time.Millisecond, "1s"},
		{45 * time.Second, "45s"},
		{90*time.Minute + 29*time.Second, "1h30m"},
		{36 * time.Hour, "36h"},
		{51*time.Hour + 20*time.Minute, "2d3h"},
		{14 * 24 * time.Hour, "14d"},
	} {
		if got := Approx(c.d); got != c.want {
			t.Errorf("Approx(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
