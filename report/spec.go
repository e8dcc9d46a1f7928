package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// Spec is one report to make: its section of the configuration with its
// SLOs resolved and its output directory made absolute.
type Spec struct {
	rulefmt.Report
	SLOs []rulefmt.ServiceLevel
}

// Specs returns the reports of a configuration: each with the top-level
// SLOs it names (all of them when it names none) and its output directory
// resolved against the configuration file's directory.
func Specs(cfg *rulefmt.Config) []Spec {
	var out []Spec
	for _, r := range cfg.Reports {
		s := Spec{Report: r}
		for _, slo := range cfg.SLOs {
			if len(r.SLOs) == 0 || slices.Contains(r.SLOs, slo.Name) {
				s.SLOs = append(s.SLOs, slo)
			}
		}
		if !filepath.IsAbs(s.OutputDir) && cfg.File != "" {
			s.OutputDir = filepath.Join(filepath.Dir(cfg.File), s.OutputDir)
		}
		out = append(out, s)
	}
	return out
}

// Find returns the report named name.
func Find(specs []Spec, name string) (Spec, error) {
	var names []string
	for _, s := range specs {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return Spec{}, fmt.Errorf("no report named %q: the configuration has no reports: section", name)
	}
	return Spec{}, fmt.Errorf("no report named %q; the configuration's reports are %s", name, strings.Join(names, ", "))
}

// engine holds the metric names of one serving engine.
type engine struct {
	running, success, tokens string
	ttft, e2e                string
	itl                      []string // current name first, then the former
}

var engines = map[string]engine{
	"vllm": {
		running: "vllm:num_requests_running", success: "vllm:request_success_total", tokens: "vllm:generation_tokens_total",
		ttft: "vllm:time_to_first_token_seconds", e2e: "vllm:e2e_request_latency_seconds",
		itl: []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
	},
	"sglang": {
		running: "sglang:num_running_reqs", success: "sglang:num_requests_total", tokens: "sglang:generation_tokens_total",
		ttft: "sglang:time_to_first_token_seconds", e2e: "sglang:e2e_request_latency_seconds",
		itl: []string{"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"},
	},
}

// PeriodEnd is the end of the report that the schedule makes at or
// before at: the newest scheduled time not after at.
func PeriodEnd(s cron.Schedule, at time.Time) time.Time {
	// Step back until a scheduled time falls at or before at, then walk
	// forward to the newest one.
	for back := time.Minute; back <= 400*24*time.Hour; back *= 2 {
		t := s.Next(at.Add(-back))
		if t.IsZero() {
			break
		}
		if !t.After(at) {
			for {
				n := s.Next(t)
				if n.IsZero() || n.After(at) {
					return t
				}
				t = n
			}
		}
	}
	return at.Truncate(time.Minute)
}

// Periods returns the report's period ending at end and its comparison
// periods. Whole days are calendar days in the report's time zone.
func Periods(r rulefmt.Report, end time.Time) (Period, []Period) {
	loc := r.Location
	if loc == nil {
		loc = time.UTC
	}
	end = end.In(loc)
	start := back(end, r.Period)
	p := period("report", start, end, r.Period)
	var comps []Period
	for _, c := range r.Compare {
		cs, ce := back(start, c), back(end, c)
		comps = append(comps, period(compareLabel(c), cs, ce, r.Period))
	}
	return p, comps
}

const day = 24 * time.Hour

// back is t minus d, in calendar days when d is whole days.
func back(t time.Time, d time.Duration) time.Time {
	if d%day == 0 {
		return t.AddDate(0, 0, -int(d/day))
	}
	return t.Add(-d)
}

func period(label string, start, end time.Time, nominal time.Duration) Period {
	p := Period{Label: label, Start: start, End: end, Hours: end.Sub(start).Hours()}
	if d := end.Sub(start); d != nominal {
		diff := d - nominal
		verb := "went back"
		if diff < 0 {
			verb = "went forward"
		}
		p.ClockChange = fmt.Sprintf("%s long: the clocks %s by %s in %s", fmtHours(d), verb, fmtHours(absDur(diff)), start.Location())
	}
	return p
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func fmtHours(d time.Duration) string {
	h := d.Hours()
	if h == math.Trunc(h) {
		if h == 1 {
			return "1 hour"
		}
		return fmt.Sprintf("%g hours", h)
	}
	return d.String()
}

func compareLabel(d time.Duration) string {
	switch d {
	case day:
		return "day before"
	case 7 * day:
		return "week before"
	}
	if d%day == 0 {
		return fmt.Sprintf("%d days before", d/day)
	}
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m") + " before"
}
