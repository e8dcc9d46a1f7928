package report

import (
	"context"
	"fmt"
	"time"

	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// ParseAt reads the time a report is made at: RFC 3339, or a date and
// time in loc (nil: UTC), or a date in loc (the end of that day: the
// report made during it).
func ParseAt(s string, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	if d, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		return d.AddDate(0, 0, 1).Add(-time.Second), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: write 2026-11-25T06:00:00Z, 2026-11-25 06:00 (in %s) or 2026-11-25", s, loc)
}

// ForecastQueries finds a forecast rule's query in the configuration.
func ForecastQueries(cfg *rulefmt.Config) ForecastQuery {
	return func(group, rule string) (string, time.Duration, bool) {
		for _, g := range cfg.Groups {
			if g.Name != group {
				continue
			}
			for _, r := range g.Rules {
				if fc, ok := r.Spec.(*rulefmt.Forecast); ok && r.Name == rule && !fc.BottomUp {
					return fc.Expr, fc.Step, true
				}
			}
		}
		return "", 0, false
	}
}

// Unreadable is an event reader that could not connect: every read
// returns err, so the report states why it has no events.
func Unreadable(err error) EventReader { return unreadable{err} }

type unreadable struct{ err error }

func (u unreadable) ReadEvents(context.Context, []string, time.Time) ([]Received, error) {
	return nil, u.err
}
