package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/ingest"
	"github.com/inferwatch/inferwatch/internal/dur"
	"github.com/inferwatch/inferwatch/rules"
	"github.com/inferwatch/inferwatch/rules/discover"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

const initHelp = `Usage: inferwatch init --source.url URL [--selector SEL] [--out FILE [--force]] [flags]

Asks the Prometheus-compatible store at URL which serving engines and GPU
exporters it holds series of (vLLM, SGLang, TGI, Triton, DCGM: the metric
names the presets' queries read, old names and new), which labels tell its
models, pods and GPUs apart, and how often they are scraped (the median
time between the samples of a few series), and writes a configuration of
the matching presets, with comments that say why, which inferwatch check
accepts. It asks only what Prometheus and VictoriaMetrics both answer:
/api/v1/label/__name__/values and /api/v1/series with match[], and
instant queries.

What it chooses:
  presets   each preset with a metric in the store; one group per serving
            engine; DCGM joins the first group whose series it pairs with
            (a GPU series and a serving series with the same values of
            the group's labels), so that a rule correlates GPU
            utilisation with latency, else it has a group of its own
  by        the labels the series carry: the model label (model_name,
            model), pod, or instance where pods are not labelled; DCGM's
            Hostname, gpu and pod; left out where each preset's own fit
  interval  the scrape interval rounded up to whole minutes, at least 1m;
            a preset rule stepping by less than the scrape interval is
            written out with that step and range windows of two steps
  source    the URL without its credentials or query: credentials become
            a basic_auth block whose secret the user puts in a file

With --selector only the series it matches are asked about, and each group
gets it as its selector. The configuration goes to stdout, or to --out
FILE, which must not exist unless --force; a summary of what was found
goes to stderr.

  inferwatch init --source.url http://127.0.0.1:8428 --out inferwatch.yml
  inferwatch init --source.url http://vmselect:8481/select/0/prometheus --selector '{namespace="inference"}'

Exit status: 0 when it wrote a configuration, 1 when the store holds no
series of any preset (nothing is written), 2 on a usage error or when the
store cannot be asked.

Flags:
`

type initFlags struct {
	sourceURL string
	selector  string
	out       string
	force     bool
	lookback  durationFlag
	timeout   time.Duration
}

func cmdInit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := initFlags{lookback: durationFlag{time.Hour}}
	fs := newOfflineFlagSet("inferwatch init", initHelp)
	fs.StringVar(&f.sourceURL, "source.url", "", "base `URL` of the store's Prometheus API, e.g. http://127.0.0.1:8428 (user:password@ is sent as basic auth and not written)")
	fs.StringVar(&f.selector, "selector", "", "label matchers, e.g. '{namespace=\"inference\"}': ask only about the series they match, and write them as each group's selector")
	fs.StringVar(&f.out, "out", "", "write the configuration to `FILE` instead of stdout")
	fs.BoolVar(&f.force, "force", false, "overwrite --out FILE when it exists")
	fs.Var(&f.lookback, "lookback", "look for series with samples in this much of the recent past (e.g. 1h, 1d)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound on each request to the store")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if f.sourceURL == "" {
		return usageError(stderr, fs, "--source.url URL is required")
	}
	if err := checkInitURL(f.sourceURL); err != nil {
		return usageError(stderr, fs, err.Error())
	}
	if f.lookback.d <= 0 {
		return usageError(stderr, fs, "--lookback must be longer than 0")
	}
	if f.timeout <= 0 {
		return usageError(stderr, fs, "--timeout must be longer than 0")
	}
	// ExpandPresets checks the selector as a group's selector key is checked.
	if _, err := rulefmt.ExpandPresets(rulefmt.PresetOptions{Names: rulefmt.PresetNames(), Selector: f.selector}); err != nil {
		return usageError(stderr, fs, "--selector: "+err.Error())
	}
	if f.out != "" && !f.force {
		if _, err := os.Lstat(f.out); err == nil {
			return usageError(stderr, fs, fmt.Sprintf("--out %s exists; give --force to overwrite it", f.out))
		}
	}

	client, err := ingest.NewClient(ingest.ClientOptions{URL: f.sourceURL, Timeout: f.timeout})
	if err != nil {
		return usageError(stderr, fs, err.Error())
	}
	end := time.Now()
	rep, err := discover.Find(ctx, client, discover.Question{URL: redact(f.sourceURL), Selector: f.selector, Start: end.Add(-f.lookback.d), End: end})
	if err != nil {
		fmt.Fprintf(stderr, "inferwatch init: %v\n", err)
		return 2
	}
	if rep.Empty() {
		fmt.Fprintf(stderr, "inferwatch init: %s holds no series of a preset's metrics (%s) in the last %s; nothing written\n",
			rep.Where(), strings.Join(rulefmt.PresetNames(), ", "), dur.Format(f.lookback.d))
		return 1
	}
	text, err := rep.Config(f.sourceURL)
	if err != nil {
		fmt.Fprintf(stderr, "inferwatch init: %v\n", err)
		return 1
	}
	// What init writes, check must accept: a failure here is a bug of init.
	if err := checkConfigText(text, f.out); err != nil {
		fmt.Fprintf(stderr, "inferwatch init: the configuration it made does not pass inferwatch check, which is a bug of inferwatch init:\n%v\n", err)
		return 1
	}
	rep.WriteSummary(stderr)
	if f.out == "" {
		if _, err := io.WriteString(stdout, text); err != nil {
			fmt.Fprintln(stderr, "inferwatch init: writing the configuration:", err)
			return 1
		}
		return 0
	}
	if err := writeNewFile(f.out, []byte(text), f.force); err != nil {
		if errors.Is(err, os.ErrExist) {
			return usageError(stderr, fs, fmt.Sprintf("--out %s exists; give --force to overwrite it", f.out))
		}
		fmt.Fprintln(stderr, "inferwatch init:", err)
		return 1
	}
	fmt.Fprintf(stderr, "wrote %s; check it with: inferwatch check %s\n", f.out, f.out)
	return 0
}

// checkInitURL checks --source.url as source.url is checked, except that
// it may carry credentials and a query (sent with every request, never
// written).
func checkInitURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return rulefmt.CheckSourceURL(raw)
	}
	clean := *u
	clean.User, clean.RawQuery, clean.ForceQuery = nil, "", false
	if err := rulefmt.CheckSourceURL(clean.String()); err != nil {
		return fmt.Errorf("--source.url %s: %w", redact(raw), err)
	}
	return nil
}

// checkConfigText checks a configuration as inferwatch check does; file
// is where it will be written ("" for stdout), against which relative
// paths in it are read.
func checkConfigText(text, file string) error {
	cfg, err := rulefmt.Parse([]byte(text), file)
	if err != nil {
		return err
	}
	_, err = rules.Build(cfg.Groups)
	return err
}

// writeNewFile writes data to path through a temporary file beside it,
// so that path never holds half a configuration. Unless force, it fails
// with an error wrapping os.ErrExist when path exists, even one created
// meanwhile.
func writeNewFile(path string, data []byte, force bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if force {
		return os.Rename(tmp.Name(), path)
	}
	// A hard link fails when path exists, where a rename would replace it.
	return os.Link(tmp.Name(), path)
}
