package docs

import (
	"reflect"
	"strings"
	"testing"
)

func TestAnchor(t *testing.T) {
	f := func(title, want string) {
		t.Helper()
		if got := anchor(title); got != want {
			t.Errorf("anchor(%q) = %q, want %q", title, got, want)
		}
	}
	f("The daemon's own metrics", "the-daemons-own-metrics")
	f("`inferwatch run`", "inferwatch-run")
	f("Autoscaling: Prometheus, KEDA and the HPA", "autoscaling-prometheus-keda-and-the-hpa")
	f("slos and reports", "slos-and-reports")
	f("A series' first day", "a-series-first-day")
	f("[Write-back](writeback.md) to the store", "write-back-to-the-store")
	f("max_response_bytes and_under", "max_response_bytes-and_under")
	f("Ünïcode 2.0", "ünïcode-20")
}

func TestParsePage(t *testing.T) {
	p, err := parsePage("x.md", strings.Join([]string{
		"# Title",
		"See [a](a.md#b) and `[not](a link)` and ![img](i.png).",
		"## Title",
		"```sh",
		"[in](code.md)",
		"```",
		"Setext",
		"------",
		"  ```",
		"  bin/inferwatch run --config x",
		"  ```",
		"[ref]: other.md",
	}, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, l := range p.links {
		targets = append(targets, l.target)
	}
	if want := []string{"a.md#b", "i.png", "other.md"}; !reflect.DeepEqual(targets, want) {
		t.Errorf("links %q, want %q", targets, want)
	}
	for _, a := range []string{"title", "title-1", "setext"} {
		if !p.anchors[a] {
			t.Errorf("no anchor %q in %v", a, sortedKeys(p.anchors))
		}
	}
	if len(p.spans) != 1 || p.spans[0].target != "[not](a link)" || p.spans[0].line != 2 {
		t.Errorf("code spans %+v", p.spans)
	}
	if len(p.blocks) != 2 || p.blocks[1].lines[0] != "bin/inferwatch run --config x" {
		t.Errorf("blocks %+v", p.blocks)
	}
	if _, err := parsePage("y.md", "```\nopen"); err == nil {
		t.Error("an unclosed code block is not reported")
	}
}

func TestShellCommands(t *testing.T) {
	vars := map[string]string{}
	b := codeBlock{info: "sh", lines: []string{
		`D=../data; B="bin/inferwatch backtest scale --peak-replicas 8"`,
		`$B --input $D/a.csv --hold 0s > /dev/null 2>&1   # a comment`,
		`for f in $D/*.csv; do $B --input "$f" --json; done`,
		`make build && bin/inferwatch tail --subject 'inferwatch.alerts.>' \`,
		`  --since 1h &`,
		`/usr/bin/time -f '%e s' bin/inferwatch version`,
		`curl -s http://127.0.0.1:9464/metrics | grep '^inferwatch_'`,
	}}
	cmds, err := shellCommands(b, vars)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, c := range cmds {
		if args, ok := inferwatchArgs(c.words); ok {
			got = append(got, args)
		}
	}
	want := [][]string{
		{"backtest", "scale", "--peak-replicas", "8", "--input", "../data/a.csv", "--hold", "0s"},
		{"backtest", "scale", "--peak-replicas", "8", "--input", "$f", "--json"},
		{"tail", "--subject", "inferwatch.alerts.>", "--since", "1h"},
		{"version"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commands\n got %q\nwant %q", got, want)
	}
	if _, err := shellCommands(codeBlock{info: "sh", lines: []string{`bin/inferwatch run --config 'x`}}, vars); err == nil {
		t.Error("an unclosed quote on a command line is not reported")
	}
}

func TestCheckArgs(t *testing.T) {
	spec := &commandSpec{flags: map[string]bool{"config": true, "once": false}}
	f := func(args string, wantErr string) {
		t.Helper()
		err := checkArgs(spec, strings.Fields(args))
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("%q: %v", args, err)
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("%q: error %v, want one with %q", args, err, wantErr)
		}
	}
	f("--config FILE --once", "")
	f("-config=FILE -once --help", "")
	f("--once FILE", "takes only flags")
	f("--confg FILE", "not defined: -confg")
	f("--config", "needs an argument")
	f("---config x", "bad flag syntax")
	spec.takesArg = true
	f("FILE1 FILE2", "")
	f("FILE --once", "read as an argument")
}
