package rulefmt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileTooLarge(t *testing.T) {
	const msg = "the configuration is 32.0 MiB (33554433 bytes), more than the 32 MiB a configuration file may be; is it the right file?"
	path := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: Load must refuse it from its size, before reading.
	if err := f.Truncate(MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Load(path); err == nil || err.Error() != path+":1:1: "+msg {
		t.Errorf("Load: %v", err)
	}
	if _, err := Parse(make([]byte, MaxFileSize+1), "big.yaml"); err == nil || err.Error() != "big.yaml:1:1: "+msg {
		t.Errorf("Parse: %v", err)
	}
	// A file whose size is unknown is read up to the limit only.
	if _, err := os.Stat("/dev/zero"); err == nil {
		const want = "/dev/zero:1:1: the configuration is larger than 32 MiB, the most a configuration file may be; is it the right file?"
		if _, err := Load("/dev/zero"); err == nil || err.Error() != want {
			t.Errorf("Load(/dev/zero): %v", err)
		}
	}
}

// manyRules returns a configuration with n rules in one group; with
// merge, each rule takes five of its keys from one anchored mapping.
func manyRules(n int, merge bool) []byte {
	var b strings.Builder
	b.WriteString("source:\n  url: http://127.0.0.1:8428\n")
	if merge {
		b.WriteString("x-base: &base {expr: up, lookback: 2h, step: 1m, for: 5m, detector: robust}\n")
	}
	b.WriteString("groups:\n  - name: vllm\n    rules:\n")
	for i := range n {
		if merge {
			fmt.Fprintf(&b, "      - {<<: *base, name: r%d}\n", i)
			continue
		}
		fmt.Fprintf(&b, "      - name: r%d\n        expr: sum(rate(vllm:request_success_total{model=\"m%d\"}[5m]))\n        lookback: 2h\n", i, i)
	}
	return []byte(b.String())
}

// TestLargeFileIsChecked checks that a large file is checked to its end,
// not taken for an alias bomb: the expansion budget grows with the file.
func TestLargeFileIsChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 14 MB")
	}
	cfg, err := Parse(manyRules(120_000, false), "big.yaml")
	if err != nil {
		t.Fatal(firstLines(err, 3))
	}
	if n := len(cfg.Groups[0].Rules); n != 120_000 {
		t.Errorf("%d rules", n)
	}
	// 50,000 rules merging five keys each expand to 250,000 entries.
	_, err = Parse(manyRules(50_000, true), "merge.yaml")
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || !strings.Contains(err.Error(), `unknown field "x-base"`) {
		t.Errorf("merging: %v", firstLines(err, 3))
	}
}

func firstLines(err error, n int) string {
	lines := strings.SplitN(fmt.Sprint(err), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// laughs returns the billion laughs in mappings: nine levels, each
// merging the one before nine times, 9^9 entries when expanded.
func laughs() string {
	var b strings.Builder
	b.WriteString("l0: &l0 {a: 1, b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, h: 1, i: 1}\n")
	for i := 1; i <= 8; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", ")
		fmt.Fprintf(&b, "l%d: &l%d {<<: [%s]}\n", i, i, refs)
	}
	return b.String()
}

func TestAliasBombIsRefused(t *testing.T) {
	doc := laughs() + "source: {url: 'http://h'}\ngroups:\n  - name: g\n    <<: *l8\n    rules: [{name: r, expr: up}]\n"
	_, err := Parse([]byte(doc), "bomb.yaml")
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %v", err)
	}
	// The anchors at the top level are unknown fields; the bomb is
	// reported once, at its merge key, and nothing after it.
	want := `bomb.yaml:13:5: group "g": aliases and merge keys expand the configuration to more than 200`
	last := es[len(es)-1].Error()
	if len(es) != 10 || !strings.HasPrefix(last, want) || !strings.HasSuffix(last, "the most a file of its size may expand to (are aliases nested into an alias bomb?); checking stopped here") {
		t.Errorf("got %d errors, the last\n%s\nwant 10, the last\n%s…", len(es), last, want)
	}
}

func BenchmarkParseLarge(b *testing.B) {
	data := manyRules(120_000, false)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, "big.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}
