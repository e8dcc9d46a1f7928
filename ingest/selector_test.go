package ingest

import (
	"strings"
	"testing"
)

func TestSelector(t *testing.T) {
	ls := func(kv ...string) Labels {
		var out Labels
		for i := 0; i < len(kv); i += 2 {
			out = append(out, Label{Name: kv[i], Value: kv[i+1]})
		}
		out.Sort()
		return out
	}
	p0 := ls("__name__", "vllm:num_requests_running", "model", "llama", "pod", "p0")
	p2 := ls("__name__", "vllm:num_requests_running", "model", "llama", "pod", "p2")
	other := ls("__name__", "up", "pod", "p0")
	f := func(sel string, want ...bool) {
		t.Helper()
		s, err := ParseSelector(sel)
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		for i, l := range []Labels{p0, p2, other} {
			if got := s.Matches(l); got != want[i] {
				t.Errorf("%s matches %s = %v, want %v", sel, l, got, want[i])
			}
		}
	}
	f(`vllm:num_requests_running`, true, true, false)
	f(`{pod="p0"}`, true, false, true)
	f(`vllm:num_requests_running{pod=~"p[01]"}`, true, false, false)
	f(`{pod!~"p[01]"}`, false, true, false) // anchored: p2 only
	f(`{pod=~"p"}`, false, false, false)    // anchored: no partial match
	f(`{missing=""}`, true, true, true)     // an absent label is ""
	f(`{model="mistral" or pod="p2"}`, false, true, false)
	f(`{model!="llama"}`, false, false, true)

	s, _ := ParseSelector(`{pod =~ "vllm-.*", model="m"}`)
	var parts []string
	for _, m := range s.Groups()[0] {
		parts = append(parts, m.String())
	}
	if got := strings.Join(parts, ", "); got != `pod=~"vllm-.*", model="m"` {
		t.Errorf("canonical form %q", got)
	}
	for _, bad := range []string{`rate(up[5m])`, `{pod=~"("}`, `up{`} {
		if _, err := ParseSelector(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// FuzzParseSelector: any text parses to a selector or an error; a selector
// matches without panicking.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{`up`, `{pod=~"p[01]"}`, `{a="x" or b!~"y"}`, `vllm:x{a!=""}`, `{`, `rate(x[5m])`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := ParseSelector(s)
		if err != nil {
			return
		}
		sel.Matches(Labels{{Name: "__name__", Value: "up"}, {Name: "pod", Value: "p0"}})
		for _, g := range sel.Groups() {
			for _, m := range g {
				if m.Name == "" || m.String() == "" {
					t.Fatalf("%q: matcher %+v", s, m)
				}
			}
		}
	})
}
