// Command fleetgen writes the generated LLM-serving fleet of examples/fleet
// to files: the samples as VictoriaMetrics /api/v1/import JSON lines and the
// injected incidents as JSON.
//
//	go run ./examples/fleetgen --out /tmp/fleet
//	curl --data-binary @/tmp/fleet/fleet.jsonl http://127.0.0.1:8428/api/v1/import
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/inferwatch/inferwatch/examples/fleet"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetgen:", err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("out", "", "directory to write fleet.jsonl and incidents.json into (required)")
	seed := flag.Int64("seed", 1, "generator seed: the same seed gives the same bytes")
	days := flag.Int("days", 7, "days of history (at least 6)")
	step := flag.Duration("step", 30*time.Second, "sample interval: 15s, 20s, 30s or 60s")
	endStr := flag.String("end", "", "time of the last sample, RFC 3339 (default: now)")
	flag.Parse()
	if *out == "" {
		return fmt.Errorf("--out DIR is required")
	}
	end := time.Now()
	if *endStr != "" {
		t, err := time.Parse(time.RFC3339, *endStr)
		if err != nil {
			return fmt.Errorf("--end: %w", err)
		}
		end = t
	}
	f, err := fleet.New(fleet.Options{Seed: *seed, End: end, Duration: time.Duration(*days) * 24 * time.Hour, Step: *step})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	samplesPath := filepath.Join(*out, "fleet.jsonl")
	sf, err := os.Create(samplesPath)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(sf, 1<<20)
	n, err := f.WriteImportJSONL(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := sf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", samplesPath, err)
	}
	incPath := filepath.Join(*out, "incidents.json")
	inf, err := os.Create(incPath)
	if err != nil {
		return err
	}
	if err := fleet.WriteIncidents(inf, f.Incidents); err != nil {
		inf.Close()
		return fmt.Errorf("writing %s: %w", incPath, err)
	}
	if err := inf.Close(); err != nil {
		return err
	}
	fmt.Printf("%s: %d samples, %s .. %s\n%s: %d incidents\n", samplesPath, n,
		f.Start().UTC().Format(time.RFC3339), f.End().UTC().Format(time.RFC3339), incPath, len(f.Incidents))
	return nil
}
