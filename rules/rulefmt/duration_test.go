package rulefmt

import (
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/VictoriaMetrics/lib/promutil"

	"github.com/inferwatch/inferwatch/internal/dur"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "30s", want: 30 * time.Second},
		{in: "1m", want: time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "1d", want: 24 * time.Hour},
		{in: "1w", want: 7 * 24 * time.Hour},
		{in: "1.5h", want: 90 * time.Minute},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "0s", want: 0},
		{in: "-5m", want: -5 * time.Minute},
		{in: "30", err: `"30" has no unit`},
		{in: "0", err: `"0" has no unit`},
		{in: "1.5", err: `"1.5" has no unit`},
		{in: "", err: "empty duration"},
		{in: "5i", err: `cannot use duration "5i": the step-relative unit i`},
		{in: "thirty", err: `"thirty" is not a duration`},
		{in: "30 s", err: `"30 s" is not a duration`},
		{in: "1000000000y", err: "too large"},
	}
	for _, tt := range tests {
		got, err := parseDuration(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseDuration(%q) = %v, %v; want error with %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		// The syntax is that of VictoriaMetrics' promutil.Duration.
		var pd promutil.Duration
		if err := pd.UnmarshalYAML(func(v any) error { *v.(*string) = tt.in; return nil }); err != nil || pd.D != tt.want {
			t.Errorf("promutil.Duration(%q) = %v, %v; parseDuration gives %v", tt.in, pd.D, err, got)
		}
	}
}

func TestFmtDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                       "0s",
		90 * time.Minute:        "1h30m",
		time.Hour:               "1h",
		-5 * time.Minute:        "-5m",
		90 * time.Second:        "1m30s",
		1500 * time.Millisecond: "1.5s",
	} {
		if got := dur.Format(d); got != want {
			t.Errorf("dur.Format(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"url", "timeout", "basic_auth", "authorization", "tls_config"}
	for in, want := range map[string]string{
		"basic_auht": "basic_auth",
		"timeuot":    "timeout",
		"urls":       "url",
		"tls":        "",
		"proxy":      "",
	} {
		if got := suggest(in, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
