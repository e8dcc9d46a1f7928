// Command fleetbench measures inferwatch on a large generated fleet against
// the store it reads, on this machine.
//
// For each size it starts a fresh VictoriaMetrics single-node on 127.0.0.1
// (a temporary data dir, its rollup cache off so that every answer is
// computed from storage), writes that many vLLM- and DCGM-shaped series into
// it (copies of the fleet of examples/fleet, one per cluster, each with
// labels of its own and at a different time of day) and keeps writing one
// new point per series per step while it runs, as a scrape would. Then, for
// each case (series, lookback, rule), it alternates over several rounds:
//
//	C        the raw range a cold evaluation needs, fetched with a plain HTTP
//	         client and discarded: query_range (C) and /api/v1/export (C_export)
//	B        VictoriaMetrics computing zscore_over_time(sel[lookback]) for
//	         every series at the newest point, the same client
//	A_cold   `inferwatch run --once` as a process: wall time, its CPU time
//	         (user+sys) and peak RSS, and the store's CPU time meanwhile
//
// With -members N it runs N daemons on one configuration and an embedded
// NATS server on 127.0.0.1 instead, the group split into -shards shards by
// -shard-by, and measures a window of steady cycles (each member's CPU per
// interval and per series tracked, its RSS, the store's CPU) and, with more
// than one member, the takeover of a killed member's shards (members.go).
//
// With -restart it then restarts the store (its caches empty) and measures
// the first C_export, and restarts it again and measures the first A_cold.
// -shape instances labels the series as one metric that differs only in
// instance (100,000 values at 100,000 series), instead of copies of the
// fleet.
//
// It then runs the daemon with one new point per series each interval,
// reading each cycle's duration from its own /metrics
// (inferwatch_group_evaluation_duration_seconds), its CPU time and RSS from
// /proc, with one B between cycles (A_steady). It reports medians and
// spreads (min–max), the ratios A_cold/C and A_steady/B, and samples per
// second. With -publish it also measures acknowledged findings per second
// through alerting.Publisher and natsjs to an embedded NATS server with
// file storage.
//
//	make build && go run ./cmd/fleetbench -inferwatch bin/inferwatch
//	go run ./cmd/fleetbench -cases 10000/1h/sigma -rounds 3 -steady-cycles 10
//
// Everything it starts is stopped when it ends or is interrupted, every
// loop is bounded (and the whole run by -timeout), and it talks to
// 127.0.0.1 only. Linux only: CPU time and RSS come from /proc.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/internal/benchcmd"
	"github.com/inferwatch/inferwatch/internal/dur"
)

func main() { benchcmd.Main("fleetbench", run) }

// benchCase is one measured configuration.
type benchCase struct {
	Series   int
	Lookback time.Duration
	Rule     string // sigma, auto or forecast
}

func (c benchCase) String() string {
	return fmt.Sprintf("%d/%s/%s", c.Series, dur.Format(c.Lookback), c.Rule)
}

// defaultCases are measured when -cases is not given: both sizes at 1 h;
// the day-long lookback at 10,000 series only (at 100,000 it is 576 million
// samples to import, and a day of detector state is several GB).
const defaultCases = "10000/1h/sigma,10000/1h/auto,10000/1h/forecast,10000/1d/sigma,10000/1d/auto,10000/1d/forecast,100000/1h/sigma,100000/1h/auto"

type options struct {
	bin          string
	shape        shape
	restart      bool
	cases        []benchCase
	rounds       int
	steadyCycles int
	step         time.Duration
	seed         int64
	timeout      time.Duration
	publish      int
	daemonFlags  []string
	daemonEnv    []string
	jsonOut      string
	profileDir   string
	serve        bool
	scores       bool
	verbose      bool
	// the scale-out mode (members.go)
	members        int
	shards         int
	takeoverSignal string
	shardBy        string
	window         time.Duration
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fleetbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fleetbench [flags]\n\nMeasures inferwatch on a generated fleet of N series in a local VictoriaMetrics (see go doc ./cmd/fleetbench).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	cases := fs.String("cases", defaultCases, "comma-separated `SERIES/LOOKBACK/RULE` cases; RULE is sigma, auto (the default detector) or forecast")
	fs.StringVar(&o.bin, "inferwatch", "bin/inferwatch", "the inferwatch binary to measure")
	shapeName := fs.String("shape", string(shapeFleet), "how the series are labelled: fleet (copies of the generated fleet's vLLM and DCGM series, one cluster label each) or instances (one metric, vllm:kv_cache_usage_perc{namespace=\"perf\"}, whose series differ only in instance)")
	fs.BoolVar(&o.restart, "restart", false, "also measure, per case, the first export and the first A_cold after the store restarts (its caches empty)")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds of C, B and A_cold per case")
	fs.IntVar(&o.steadyCycles, "steady-cycles", 10, "steady cycles measured per case (0: none)")
	fs.DurationVar(&o.step, "step", 15*time.Second, "sample interval of the series, the rules' step and the group interval: 15s, 20s, 30s or 60s")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the fleet generator")
	fs.DurationVar(&o.timeout, "timeout", 4*time.Hour, "bound on the whole run")
	fs.IntVar(&o.publish, "publish", 0, "also measure publishing this many findings to JetStream (file storage) through alerting.Publisher, per round (0: not)")
	daemonFlags := fs.String("daemon-flags", "", "extra flags for `inferwatch run`, space-separated")
	daemonEnv := fs.String("daemon-env", "", "extra environment for `inferwatch run`, space-separated `KEY=VALUE`s (e.g. GOMEMLIMIT=900MiB)")
	fs.StringVar(&o.jsonOut, "json", "", "also write every measurement as JSON to this `FILE`")
	fs.StringVar(&o.profileDir, "profile", "", "run the steady daemon with --web.enable-pprof and write CPU profiles of its first cycle and of its steady cycles, and a heap profile after them (right after a collection), to `DIR`")
	fs.BoolVar(&o.scores, "export-metrics", true, "leave the daemon's export.metrics on (its default: every scored point's score handed to the Prometheus exporter); false turns it off, to see what it costs")
	fs.BoolVar(&o.serve, "serve", false, "only fill a store for the series and longest lookback of the first case, print its URL and keep writing a point per series each step until interrupted (or -timeout), to measure by hand")
	fs.BoolVar(&o.verbose, "v", false, "log each measurement as it is taken")
	fs.IntVar(&o.members, "members", 0, "instead of the single-process phases, run this many daemons on one configuration and an embedded NATS, measure a window of steady cycles and, with more than one, the takeover of a killed member's shards (0: not)")
	fs.IntVar(&o.shards, "shards", 0, "with -members, split the group into this many shards (below 2: one group)")
	fs.StringVar(&o.takeoverSignal, "takeover-signal", "kill", "with -members above 1, how the member with the most shards is stopped: kill (SIGKILL) or term (SIGTERM, its leases released)")
	fs.StringVar(&o.shardBy, "shard-by", "cluster", "with -shards, the label the series are split by")
	fs.DurationVar(&o.window, "window", 2*time.Minute, "with -members, the window of steady cycles measured")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch o.shape = shape(*shapeName); o.shape {
	case shapeFleet, shapeInstances:
	default:
		return o, fmt.Errorf("-shape %q: want fleet or instances", *shapeName)
	}
	var err error
	if o.cases, err = parseCases(*cases); err != nil {
		return o, err
	}
	switch o.step {
	case 15 * time.Second, 20 * time.Second, 30 * time.Second, time.Minute:
	default:
		return o, fmt.Errorf("-step %v: want 15s, 20s, 30s or 60s", o.step)
	}
	if o.rounds < 1 || o.rounds > 100 {
		return o, fmt.Errorf("-rounds %d: want 1 to 100", o.rounds)
	}
	if o.steadyCycles < 0 || o.steadyCycles > 1000 {
		return o, fmt.Errorf("-steady-cycles %d: want 0 to 1000", o.steadyCycles)
	}
	o.daemonFlags = strings.Fields(*daemonFlags)
	o.daemonEnv = strings.Fields(*daemonEnv)
	for _, kv := range o.daemonEnv {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return o, fmt.Errorf("-daemon-env %q: want KEY=VALUE", kv)
		}
	}
	if o.members < 0 || o.members > 16 {
		return o, fmt.Errorf("-members %d: want 0 to 16", o.members)
	}
	if o.takeoverSignal != "kill" && o.takeoverSignal != "term" {
		return o, fmt.Errorf("-takeover-signal %q: want kill or term", o.takeoverSignal)
	}
	if o.shards < 0 || o.shards > 256 {
		return o, fmt.Errorf("-shards %d: want 0 to 256", o.shards)
	}
	if o.members > 0 && o.window < o.step {
		return o, fmt.Errorf("-window %v: want at least a step, %v", o.window, o.step)
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return o, fmt.Errorf("-profile: %w", err)
		}
	}
	return o, benchcmd.CheckBinary(o.bin)
}

func parseCases(s string) ([]benchCase, error) {
	var out []benchCase
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		parts := strings.Split(f, "/")
		if len(parts) != 3 {
			return nil, fmt.Errorf("-cases: %q: want SERIES/LOOKBACK/RULE, e.g. 10000/1h/sigma", f)
		}
		n, err := strconv.Atoi(parts[0])
		if err != nil || n < 1 || n > 1_000_000 {
			return nil, fmt.Errorf("-cases: %q: series %q: want 1 to 1000000", f, parts[0])
		}
		lb, err := parseDuration(parts[1])
		if err != nil || lb < time.Minute || lb > 2*24*time.Hour {
			return nil, fmt.Errorf("-cases: %q: lookback %q: want 1m to 2d (e.g. 1h, 1d)", f, parts[1])
		}
		switch parts[2] {
		case "sigma", "auto", "forecast":
		default:
			return nil, fmt.Errorf("-cases: %q: rule %q: want sigma, auto or forecast", f, parts[2])
		}
		out = append(out, benchCase{Series: n, Lookback: lb, Rule: parts[2]})
	}
	if len(out) == 0 {
		return nil, errors.New("-cases: no case")
	}
	return out, nil
}

// parseDuration reads 90s, 15m, 1h, 1d.
func parseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		return time.Duration(n) * 24 * time.Hour, err
	}
	return time.ParseDuration(s)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	b := &bench{o: o, log: newLogger(stderr, o.verbose), machine: machineInfo()}
	b.log.info("machine", "cores", runtime.NumCPU(), "loadavg", b.machine.LoadBefore)
	err = b.runAll(ctx)
	b.machine.LoadAfter = loadavg()
	b.report(stdout)
	if o.jsonOut != "" {
		if werr := b.writeJSON(o.jsonOut); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}
