package report

import (
	"strings"
	"testing"
	"time"
)

func TestParseAt(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	for _, tc := range []struct {
		in   string
		loc  *time.Location
		want string // RFC 3339 in UTC
	}{
		{"2026-11-25T06:00:00Z", berlin, "2026-11-25T06:00:00Z"},
		{"2026-11-25 06:00", berlin, "2026-11-25T05:00:00Z"}, // CET is UTC+1
		{"2026-11-25T06:00:30", nil, "2026-11-25T06:00:30Z"},
		{"2026-11-25", berlin, "2026-11-25T22:59:59Z"}, // the end of the local day
	} {
		got, err := ParseAt(tc.in, tc.loc)
		if err != nil || got.UTC().Format(time.RFC3339) != tc.want {
			t.Errorf("ParseAt(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseAt("yesterday", nil); err == nil || !strings.Contains(err.Error(), `"yesterday" is not a time`) {
		t.Errorf("ParseAt(yesterday): %v", err)
	}
}
