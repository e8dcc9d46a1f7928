package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/ingest/localvm"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// initFleet starts a VictoriaMetrics holding two hours of the generated
// fleet ending now, or only its series that keep returns true for.
func initFleet(t *testing.T, keep func(name string) bool) *localvm.VM {
	t.Helper()
	vm := localvm.Run(t)
	end := time.Now().Truncate(time.Minute)
	f, err := fleet.New(fleet.Options{Seed: 1, End: end, Duration: fleetWeek, Step: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	from := end.Add(-2 * time.Hour).UnixMilli()
	var ss []ingest.Series
	for _, s := range f.Series() {
		if !keep(s.Labels.Get("__name__")) {
			continue
		}
		i, _ := slices.BinarySearch(s.Timestamps, from)
		ss = append(ss, ingest.Series{Labels: s.Labels, Timestamps: s.Timestamps[i:], Values: s.Values[i:]})
	}
	if len(ss) > 0 {
		importSeries(t, vm, ss...)
	}
	return vm
}

// initOut runs inferwatch init with args and --out to a file in a
// temporary directory, and returns the exit code, stderr and the file
// ("" when none was written).
func initOut(t *testing.T, args ...string) (code int, stderr, file, text string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "inferwatch.yml")
	code, stdout, stderr := runCmd(t, context.Background(), append(append([]string{"init"}, args...), "--out", file)...)
	if stdout != "" {
		t.Errorf("stdout %q, want nothing with --out", stdout)
	}
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return code, stderr, file, string(b)
}

// mustContain fails the test for each of wants that text lacks.
func mustContain(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// checkWritten runs inferwatch check on file and returns its stdout.
func checkWritten(t *testing.T, file string) string {
	t.Helper()
	code, out, errOut := runCmd(t, context.Background(), "check", "--config", file)
	if code != 0 {
		t.Fatalf("inferwatch check of what init wrote: exit %d\n%s", code, errOut)
	}
	return out
}

func TestInitOnTheFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	vm := initFleet(t, func(string) bool { return true })
	code, stderr, file, text := initOut(t, "--source.url", vm.URL())
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	mustContain(t, "the summary", stderr,
		"found vLLM: 9 of the vllm preset's 14 metrics; 7 series of vllm:num_requests_waiting across 3 model values and 7 pod values; scraped every 30s",
		"found DCGM: 2 of the dcgm preset's 3 metrics",
		"group vllm-dcgm: preset [vllm, dcgm], by [model, pod], interval 1m",
		"wrote "+file)
	mustContain(t, "the configuration", text,
		"url: "+vm.URL(),
		"- name: vllm-dcgm",
		"interval: 1m",
		"preset: [vllm, dcgm]",
		"by: [model, pod]",
		"vllm_itl_mean and dcgm_sm_active read metrics the store does not hold")
	mustContain(t, "inferwatch check", checkWritten(t, file), "valid: 1 groups, ")

	// The rules it wrote find the fleet's series: every query of the
	// configuration returns series from the store.
	cfg, err := rulefmt.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ingest.NewClient(ingest.ClientOptions{URL: vm.URL()})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range cfg.Groups {
		for _, r := range g.Rules {
			if r.Name == "vllm_itl_mean" || r.Name == "dcgm_sm_active" {
				continue
			}
			qs := []string{r.Expr}
			if c, ok := r.Spec.(*rulefmt.Correlate); ok {
				qs = []string{c.X, c.Y}
			}
			for _, q := range qs {
				ss, err := c.Query(context.Background(), q, time.Now().Add(-time.Minute))
				if err != nil {
					t.Fatalf("rule %s: %s: %v", r.Name, q, err)
				}
				if len(ss) == 0 {

					t.Errorf("rule %s: %s returns no series", r.Name, q)
				}
			}
		}
	}
}

func TestInitWithASelector(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	vm := initFleet(t, func(string) bool { return true })
	code, stderr, file, text := initOut(t, "--source.url", vm.URL(), "--selector", `{namespace="inference"}`)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	mustContain(t, "the summary", stderr, `(the series of {namespace="inference"})`)
	mustContain(t, "the configuration", text, `selector: '{namespace="inference"}'`)
	checkWritten(t, file)

	code, stderr, file, text = initOut(t, "--source.url", vm.URL(), "--selector", `{namespace="elsewhere"}`)
	if code != 1 || text != "" {
		t.Fatalf("a selector that matches nothing: exit %d, wrote %q", code, text)
	}
	mustContain(t, "stderr", stderr, `holds no series of a preset's metrics`, "nothing written")
	_ = file
}

func TestInitOnDCGMOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	vm := initFleet(t, func(name string) bool { return strings.HasPrefix(name, "DCGM_") })
	code, stderr, file, text := initOut(t, "--source.url", vm.URL())
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "vLLM") || strings.Contains(text, "vllm") {
		t.Errorf("a store of DCGM metrics only gave vLLM rules:\n%s\n%s", stderr, text)
	}
	mustContain(t, "the summary", stderr, "found DCGM: 2 of the dcgm preset's 3 metrics")
	mustContain(t, "the configuration", text, "preset: dcgm", "by: [Hostname, gpu, pod]")
	checkWritten(t, file)
}

func TestInitOnAnEmptyStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts VictoriaMetrics")
	}
	vm := initFleet(t, func(string) bool { return false })
	code, stderr, _, text := initOut(t, "--source.url", vm.URL())
	if code != 1 || text != "" {
		t.Fatalf("exit %d, wrote %q; stderr:\n%s", code, text, stderr)
	}
	mustContain(t, "stderr", stderr, vm.URL()+" holds no series of a preset's metrics (dcgm, sglang, tgi, triton, vllm) in the last 1h", "nothing written")
}

func TestInitRefuses(t *testing.T) {
	exists := filepath.Join(t.TempDir(), "there.yml")
	if err := os.WriteFile(exists, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no url", nil, 2, "--source.url URL is required"},
		{"unreachable", []string{"--source.url", "http://ops:s3cret@127.0.0.1:1", "--timeout", "2s"}, 2, "http://ops:xxxxx@127.0.0.1:1"},
		{"bad selector", []string{"--source.url", "http://127.0.0.1:1", "--selector", "{namespace="}, 2, "--selector: "},
		{"file exists", []string{"--source.url", "http://127.0.0.1:1", "--out", exists}, 2, "--out " + exists + " exists; give --force to overwrite it"},
		{"bad lookback", []string{"--source.url", "http://127.0.0.1:1", "--lookback", "0s"}, 2, "--lookback must be longer than 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, context.Background(), append([]string{"init"}, tc.args...)...)
			if code != tc.code || stdout != "" {
				t.Fatalf("exit %d (want %d), stdout %q", code, tc.code, stdout)
			}
			mustContain(t, "stderr", stderr, tc.want)
			if strings.Contains(stderr, "s3cret") {
				t.Errorf("stderr shows the password:\n%s", stderr)
			}
		})
	}
	if b, _ := os.ReadFile(exists); string(b) != "x" {
		t.Errorf("init changed a file it refused to overwrite: %q", b)
	}
}
