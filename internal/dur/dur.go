// Package dur writes durations: exactly, as a configuration file or a
// flag reads them, and rounded, for people.
package dur

import (
	"strconv"
	"strings"
	"time"
)

const day = 24 * time.Hour

// Format writes d as the configuration and the flags read it: whole days
// as "7d", else Go's form without zero units ("1h30m", "10m", "45s",
// "1.5s", "0s").
func Format(d time.Duration) string {
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Approx writes d for people, rounded to the second below an hour, to the
// minute below two days and to the hour beyond, in days (from two on),
// hours, minutes and seconds: "45s", "1h30m", "36h", "2d3h". Zero and
// less is "0s".
func Approx(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d >= 2*day:
		d = d.Round(time.Hour)
	case d >= time.Hour:
		d = d.Round(time.Minute)
	default:
		d = d.Round(time.Second)
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{day, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if d >= u.d && (u.d != day || d >= 2*day) {
			b.WriteString(strconv.FormatInt(int64(d/u.d), 10))
			b.WriteString(u.name)
			d %= u.d
		}
	}
	return b.String()
}
