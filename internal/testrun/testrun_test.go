package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrinter feeds the events go test -json wrote for a package with a
// passing, a skipped and a failing test (its subtests one passing, one
// failing, one skipped) and checks what go test without -v would print,
// and the skips.
func TestPrinter(t *testing.T) {
	const stream = `{"Action":"start","Package":"example.com/m/p"}
{"Action":"run","Package":"example.com/m/p","Test":"TestPass"}
{"Action":"output","Package":"example.com/m/p","Test":"TestPass","Output":"=== RUN   TestPass\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestPass","Output":"    x_test.go:3: hello\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestPass","Output":"--- PASS: TestPass (0.00s)\n"}
{"Action":"pass","Package":"example.com/m/p","Test":"TestPass","Elapsed":0}
{"Action":"run","Package":"example.com/m/p","Test":"TestSkip"}
{"Action":"output","Package":"example.com/m/p","Test":"TestSkip","Output":"=== RUN   TestSkip\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestSkip","Output":"    x_test.go:4: before\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestSkip","Output":"    x_test.go:4: no thing here\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestSkip","Output":"        second line\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"example.com/m/p","Test":"TestSkip","Elapsed":0}
{"Action":"run","Package":"example.com/m/p","Test":"TestFail"}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail","Output":"=== RUN   TestFail\n"}
{"Action":"run","Package":"example.com/m/p","Test":"TestFail/ok"}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail/ok","Output":"=== RUN   TestFail/ok\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail/ok","Output":"    x_test.go:6: fine\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail/ok","Output":"--- PASS: TestFail/ok (0.00s)\n"}
{"Action":"pass","Package":"example.com/m/p","Test":"TestFail/ok","Elapsed":0}
{"Action":"run","Package":"example.com/m/p","Test":"TestFail/sub"}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail/sub","Output":"=== RUN   TestFail/sub\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail/sub","Output":"    x_test.go:7: boom\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail/sub","Output":"--- FAIL: TestFail/sub (0.00s)\n"}
{"Action":"fail","Package":"example.com/m/p","Test":"TestFail/sub","Elapsed":0}
{"Action":"run","Package":"example.com/m/p","Test":"TestFail/skipped"}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail/skipped","Output":"=== RUN   TestFail/skipped\n"}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail/skipped","Output":"--- SKIP: TestFail/skipped (0.00s)\n"}
{"Action":"skip","Package":"example.com/m/p","Test":"TestFail/skipped","Elapsed":0}
{"Action":"output","Package":"example.com/m/p","Test":"TestFail","Output":"--- FAIL: TestFail (0.00s)\n"}
{"Action":"fail","Package":"example.com/m/p","Test":"TestFail","Elapsed":0}
{"Action":"output","Package":"example.com/m/p","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/m/p","Output":"FAIL\texample.com/m/p\t0.010s\n"}
{"Action":"fail","Package":"example.com/m/p","Elapsed":0.01}
{"Action":"start","Package":"example.com/m"}
{"Action":"output","Package":"example.com/m","Output":"PASS\n"}
{"Action":"output","Package":"example.com/m","Output":"ok  \texample.com/m\t0.002s\n"}
{"Action":"pass","Package":"example.com/m","Elapsed":0.002}
{"Action":"start","Package":"example.com/m/q"}
{"Action":"output","Package":"example.com/m/q","Output":"?   \texample.com/m/q\t[no test files]\n"}
{"Action":"skip","Package":"example.com/m/q","Elapsed":0}
{"ImportPath":"example.com/m/r [example.com/m/r.test]","Action":"build-output","Output":"r/r_test.go:3:1: syntax error\n"}
{"ImportPath":"example.com/m/r [example.com/m/r.test]","Action":"build-fail"}
FAIL
`
	const want = `    x_test.go:7: boom
--- FAIL: TestFail/sub (0.00s)
--- FAIL: TestFail (0.00s)
FAIL
FAIL	example.com/m/p	0.010s
ok  	example.com/m	0.002s
?   	example.com/m/q	[no test files]
r/r_test.go:3:1: syntax error
FAIL
`
	var out bytes.Buffer
	p := newPrinter(&out, "example.com/m")
	for _, l := range strings.Split(strings.TrimSuffix(stream, "\n"), "\n") {
		p.line([]byte(l))
	}
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	var skips []string
	for _, s := range p.skips {
		skips = append(skips, s.String())
	}
	wantSkips := []string{
		"./p TestSkip: x_test.go:4: no thing here second line",
		"./p TestFail/skipped: (no reason given)",
	}
	if strings.Join(skips, "\n") != strings.Join(wantSkips, "\n") {
		t.Errorf("skips:\n%s\nwant:\n%s", strings.Join(skips, "\n"), strings.Join(wantSkips, "\n"))
	}
}

// TestPrinterUnfinishedTest: a test cut off by a panic or the timeout has
// no result of its own; its output is printed with its package's failure.
func TestPrinterUnfinishedTest(t *testing.T) {
	var out bytes.Buffer
	p := newPrinter(&out, "example.com/m")
	for _, l := range []string{
		`{"Action":"run","Package":"example.com/m","Test":"TestHang"}`,
		`{"Action":"output","Package":"example.com/m","Test":"TestHang","Output":"=== RUN   TestHang\n"}`,
		`{"Action":"output","Package":"example.com/m","Test":"TestHang","Output":"    h_test.go:9: waiting\n"}`,
		`{"Action":"output","Package":"example.com/m","Output":"panic: test timed out after 1s\n"}`,
		`{"Action":"output","Package":"example.com/m","Output":"FAIL\texample.com/m\t1.005s\n"}`,
		`{"Action":"fail","Package":"example.com/m","Elapsed":1.005}`,
	} {
		p.line([]byte(l))
	}
	want := "    h_test.go:9: waiting\npanic: test timed out after 1s\nFAIL\texample.com/m\t1.005s\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestAllowed(t *testing.T) {
	allow, err := allowed(strings.NewReader("# a comment\n\n  shared/data  \n^\\./report TestHTML: \n"))
	if err != nil {
		t.Fatal(err)
	}
	skips := []skip{
		{"./analysis", "TestNAB", "nab_test.go:39: NAB data not found at ../../shared/data/nab"},
		{"./report", "TestHTML", "headless.go:65: no chromium"},
		{"./ingest", "TestClientAgainstPrometheus", "localprom.go:52: localprom: prometheus not found"},
	}
	bad := notAllowed(skips, allow)
	if len(bad) != 1 || bad[0].Test != "TestClientAgainstPrometheus" {
		t.Errorf("not allowed: %v, want the Prometheus test only", bad)
	}
	if _, err := allowed(strings.NewReader("ok\n(unclosed\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad expression: %v, want an error naming line 2", err)
	}
}

// TestRun runs go test through testrun on a module of its own: a package
// with a passing test, a skipped one and one that leaves a directory in
// TMPDIR. The run fails for what was left, names it and removes it; with
// an allowed-skips file that does not allow the skip, it fails for that
// too; without the leftover and with the skip allowed, it passes.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	mod := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("m_test.go", `package m

import (
	"os"
	"testing"
)

func TestPass(t *testing.T) {}

func TestSkip(t *testing.T) { t.Skip("nothing to test against") }

func TestLeave(t *testing.T) {
	if os.Getenv("LEAVE") == "1" {
		os.MkdirTemp("", "left-behind-")
	}
}
`)
	allow := filepath.Join(mod, "allowed-skips")
	write("allowed-skips", "# none\n")
	t.Chdir(mod)
	t.Setenv("GOFLAGS", "")

	t.Setenv("LEAVE", "1")
	var out, errOut bytes.Buffer
	code := run([]string{"-allowed-skips", allow, "--", "-count=1", "."}, &out, &errOut)
	for _, want := range []string{
		"ok  \texample.com/m\t",
		"1 skipped:\nSKIP . TestSkip: m_test.go:10: nothing to test against\n",
		"1 skipped for a reason " + allow + " does not allow:\nSKIP . TestSkip: ",
		"the tests left these in their temporary directory",
		"  left-behind-",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s\nstderr:\n%s", want, out.String(), errOut.String())
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "inferwatch-test-*", "left-behind-*")); len(left) > 0 {
		t.Errorf("testrun did not remove its temporary directory: %v", left)
	}

	t.Setenv("LEAVE", "0")
	write("allowed-skips", "nothing to test against\n")
	out.Reset()
	if code := run([]string{"-allowed-skips", allow, "--", "-count=1", "."}, &out, &errOut); code != 0 {
		t.Errorf("exit %d, want 0:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}

	// A failing test: go test's status, its output printed.
	write("fail_test.go", "package m\n\nimport \"testing\"\n\nfunc TestFail(t *testing.T) { t.Error(\"broken\") }\n")
	out.Reset()
	write("m_test.go", "package m\n")
	if code := run([]string{"--", "-count=1", "."}, &out, &errOut); code != 1 || !strings.Contains(out.String(), "fail_test.go:5: broken\n--- FAIL: TestFail") ||
		!strings.Contains(out.String(), "\nno test skipped\n") {
		t.Errorf("exit %d, want 1 with the failure printed:\n%s", code, out.String())
	}
}
