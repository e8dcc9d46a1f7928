// Command inferwatch watches the metrics of LLM-serving fleets in a
// Prometheus-compatible store, finds what a person would miss, and publishes
// findings on NATS JetStream.
//
//	inferwatch init --source.url URL [--selector SEL] [--out FILE]
//	inferwatch check --config FILE
//	inferwatch run --config FILE [--once] [--backfill DURATION]
//
// and offline, over files: detect, backtest nab, backtest scale, correlate,
// decay, knee, forecast and report (see the usage text).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/VictoriaMetrics/metrics"
)

const usage = `inferwatch watches LLM-serving metrics and publishes findings on NATS.

Usage:
  inferwatch init --source.url URL    write a configuration for what the store holds
  inferwatch check --config FILE       check a configuration file
  inferwatch run --config FILE [flags] evaluate the rule groups on their schedule
  inferwatch tail [--config FILE]      print the published events as they arrive, one line each
  inferwatch members --config FILE     print the replicas sharing the configuration and who owns each group
  inferwatch detect --input FILE       score every row of a file, write CSV with the scores
  inferwatch backtest nab --data DIR --windows FILE  score a detector on the NAB corpus
  inferwatch backtest scale --input FILE --capacity R  replay traffic through the scale rule against a reactive HPA
  inferwatch correlate --x FILE --y FILE  correlate two series, find the lag (JSON)
  inferwatch decay --input FILE        throughput decay η and its trend (JSON)
  inferwatch knee --input FILE         knee of a concurrency,qps curve (JSON)
  inferwatch forecast --input FILE [--backtest]  forecast a series, or backtest the forecaster on it (CSV)
  inferwatch report --config FILE --name NAME [--at TIME]  make a trend report now, or for a past day
  inferwatch version                   print the version

Run "inferwatch COMMAND --help" for the flags of a command.
`

func main() {
	// /metrics gives each family its # HELP and # TYPE lines; the switch
	// is the metrics package's and process-wide, so it is thrown here.
	metrics.ExposeMetadata(true)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(runMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// runMain runs one command and returns the process exit code: 0 on success,
// 1 when the command failed, 2 on a usage error.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "init":
		return cmdInit(ctx, args[1:], stdout, stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "tail":
		return cmdTail(ctx, args[1:], stdout, stderr)
	case "members":
		return cmdMembers(ctx, args[1:], stdout, stderr)
	case "detect":
		return cmdDetect(ctx, args[1:], stdout, stderr)
	case "backtest":
		return cmdBacktest(ctx, args[1:], stdout, stderr)
	case "correlate":
		return cmdCorrelate(args[1:], stdout, stderr)
	case "decay":
		return cmdDecay(args[1:], stdout, stderr)
	case "knee":
		return cmdKnee(args[1:], stdout, stderr)
	case "forecast":
		return cmdForecast(args[1:], stdout, stderr)
	case "report":
		return cmdReport(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		info, _ := debug.ReadBuildInfo()
		fmt.Fprintln(stdout, "inferwatch", versionText(version, commit, info))
		return 0
	case "help", "--help", "-help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "inferwatch: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
