package main

import (
	"strings"
	"testing"
)

// TestRunRefusesABadMemLimitRatio: the ratio is a share.
func TestRunRefusesABadMemLimitRatio(t *testing.T) {
	var out, errb strings.Builder
	code := cmdRun(t.Context(), []string{"--config", "x.yml", "--auto-gomemlimit.ratio", "1.5"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--auto-gomemlimit.ratio 1.5: want a share in (0, 1], or 0 for none") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestRunRefusesABadGCPercent: the target is a percentage of at least 1,
// and the message says how to turn the collector off instead.
func TestRunRefusesABadGCPercent(t *testing.T) {
	var out, errb strings.Builder
	code := cmdRun(t.Context(), []string{"--config", "x.yml", "--runtime.gogc", "0"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "--runtime.gogc 0: want a percentage of at least 1 (GOGC=off turns the collector off)") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
