package report

import (
	"testing"

	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// TestReportCoversItsGroupsAndRules: a report's groups and rules (a name
// or group/rule) each narrow what it reports; unset, they cover all.
func TestReportCoversItsGroupsAndRules(t *testing.T) {
	f := func(groups, rules []string, g, r string, want bool) {
		t.Helper()
		b := &builder{spec: Spec{Report: rulefmt.Report{Groups: groups, Rules: rules}}}
		if got := b.wanted(g, r); got != want {
			t.Errorf("groups %q rules %q: %s/%s covered %v, want %v", groups, rules, g, r, got, want)
		}
	}
	f(nil, nil, "latency", "ttft", true)
	f([]string{"latency"}, nil, "latency", "ttft", true)
	f([]string{"latency"}, nil, "capacity", "ttft", false)
	f(nil, []string{"ttft"}, "latency", "ttft", true)
	f(nil, []string{"ttft"}, "capacity", "ttft", true)
	f(nil, []string{"latency/ttft"}, "capacity", "ttft", false)
	f(nil, []string{"latency/ttft"}, "latency", "ttft", true)
	f(nil, []string{"ttft"}, "latency", "e2e", false)
	f([]string{"capacity"}, []string{"ttft"}, "latency", "ttft", false)
}
