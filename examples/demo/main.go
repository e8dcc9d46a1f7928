// Command demo runs inferwatch end to end on one machine: it starts a
// VictoriaMetrics single-node and an embedded NATS server, backfills a
// generated week of an LLM-serving fleet with injected incidents, runs
// `inferwatch run --once` over it, and prints what a subscriber receives
// with `inferwatch tail`.
//
//	go run ./examples/demo --inferwatch bin/inferwatch
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/examples/fleet"
	"github.com/inferwatch/inferwatch/ingest/localvm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	bin := flag.String("inferwatch", "bin/inferwatch", "the inferwatch binary to run")
	config := flag.String("config", "examples/inferwatch.yml", "the configuration the daemon runs")
	days := flag.Int("days", 7, "days of fleet history to generate")
	seed := flag.Int64("seed", 1, "seed of the fleet generator")
	flag.Parse()

	if _, err := os.Stat(*bin); err != nil {
		return fmt.Errorf("the inferwatch binary %s is missing (run `make build` first): %w", *bin, err)
	}

	step("Starting VictoriaMetrics single-node on 127.0.0.1 with a temporary data dir")
	vm, err := localvm.Start(ctx, localvm.Options{})
	if err != nil {
		return err
	}
	defer vm.Stop()
	fmt.Printf("   %s\n", vm.URL())

	step(fmt.Sprintf("Generating %d days of a vLLM + DCGM fleet (seed %d) and importing it", *days, *seed))
	started := time.Now()
	f, err := fleet.New(fleet.Options{
		Seed:     *seed,
		End:      time.Now(), // like live data: the daemon evaluates up to now − evaluation_delay
		Duration: time.Duration(*days) * 24 * time.Hour,
		Step:     30 * time.Second,
	})
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	var samples int
	go func() {
		n, err := f.WriteImportJSONL(pw)
		samples = n
		pw.CloseWithError(err)
	}()
	if err := vm.Import(ctx, pr); err != nil {
		return fmt.Errorf("importing the fleet: %w", err)
	}
	fmt.Printf("   %d models, %d samples imported in %.1fs\n", len(f.Models), samples, time.Since(started).Seconds())
	for _, m := range f.Models {
		quiet := ""
		if m.Quiet {
			quiet = " (quiet: no incident)"
		}
		fmt.Printf("   %-26s pods %s%s\n", m.Name, strings.Join(m.Pods, ", "), quiet)
	}
	fmt.Println("   injected incidents:")
	for _, inc := range f.Incidents {
		fmt.Printf("   - %-22s %-26s %-20s %s → %s\n", inc.Kind, inc.Model, orAll(inc.Pod),
			inc.Start.UTC().Format("Mon 15:04"), inc.End.UTC().Format("15:04 MST"))
	}

	step("Starting an embedded NATS server with JetStream and subscribing to inferwatch.findings.>")
	srv, err := natsjs.StartEmbedded(natsjs.EmbeddedOptions{Listen: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL(), nats.Name("inferwatch-demo-subscriber"))
	if err != nil {
		return err
	}
	defer nc.Close()
	var (
		mu       sync.Mutex
		received []alerting.Finding
		first    *nats.Msg
	)
	sub, err := nc.Subscribe("inferwatch.findings.>", func(m *nats.Msg) {
		var ev struct {
			ID   string           `json:"id"`
			Type string           `json:"type"`
			Data alerting.Finding `json:"data"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			fmt.Printf("   !! undecodable message on %s: %v\n", m.Subject, err)
			return
		}
		mu.Lock()
		received = append(received, ev.Data)
		if first == nil {
			first = m
		}
		mu.Unlock()
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	var (
		forecasts = map[string]alerting.ForecastData{}
		scales    []alerting.ScaleData
	)
	fsub, err := nc.Subscribe("inferwatch.forecasts.>", func(m *nats.Msg) {
		var ev struct {
			Data alerting.ForecastData `json:"data"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			fmt.Printf("   !! undecodable forecast on %s: %v\n", m.Subject, err)
			return
		}
		mu.Lock()
		forecasts[ev.Data.Rule+" "+ev.Data.Series] = ev.Data
		mu.Unlock()
	})
	if err != nil {
		return err
	}
	defer fsub.Unsubscribe()
	ssub, err := nc.Subscribe("inferwatch.scale.>", func(m *nats.Msg) {
		var ev struct {
			Data alerting.ScaleData `json:"data"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			fmt.Printf("   !! undecodable scale signal on %s: %v\n", m.Subject, err)
			return
		}
		mu.Lock()
		scales = append(scales, ev.Data)
		mu.Unlock()
	})
	if err != nil {
		return err
	}
	defer ssub.Unsubscribe()

	step(fmt.Sprintf("Running: %s run --config %s --once --backfill %dd", *bin, *config, *days))
	outboxDir, err := os.MkdirTemp("", "inferwatch-demo-outbox-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(outboxDir)
	cmd := exec.CommandContext(ctx, *bin, "run", "--config", *config, "--once",
		"--backfill", fmt.Sprintf("%dd", *days),
		"--source.url", vm.URL(), "--nats.url", srv.ClientURL(), "--outbox.dir", outboxDir,
		"--web.listen-address", "127.0.0.1:0", "--log.level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("inferwatch run: %w", err)
	}
	// Let the subscriber take the last messages in flight (bounded).
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	// What a person watching the stream sees: inferwatch tail replays the
	// findings the stream holds, one line each.
	held, err := findingsHeld(ctx, nc)
	if err != nil {
		return err
	}
	tailArgs := []string{"tail", "--nats.url", srv.ClientURL(), "--since", "1h", "--subject", "inferwatch.findings.>",
		"--count", fmt.Sprint(held)}
	shown := make([]string, len(tailArgs))
	for i, a := range tailArgs {
		shown[i] = a
		if strings.ContainsAny(a, "*>") {
			shown[i] = "'" + a + "'"
		}
	}
	step(fmt.Sprintf("What a subscriber receives: %s %s", *bin, strings.Join(shown, " ")))
	if held > 0 {
		tail := exec.CommandContext(ctx, *bin, tailArgs...)
		tail.Stdout, tail.Stderr = os.Stdout, os.Stderr
		if err := tail.Run(); err != nil {
			return fmt.Errorf("inferwatch tail: %w", err)
		}
	}
	step(fmt.Sprintf("Summary: %d findings received", len(received)))
	summarize(f, received)
	showForecasts(forecasts)
	showScale(scales)
	if err := showReport(ctx, *bin, *config, vm.URL(), srv.ClientURL()); err != nil {
		return err
	}
	if first != nil {
		step("The first event as a subscriber received it")
		fmt.Printf("   subject: %s\n   Nats-Msg-Id: %s\n", first.Subject, first.Header.Get("Nats-Msg-Id"))
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, first.Data, "   ", "  "); err == nil {
			fmt.Printf("   %s\n", pretty.String())
		}
	}
	return nil
}

func step(s string) { fmt.Printf("\n== %s\n", s) }

// findingsHeld is how many findings the stream holds.
func findingsHeld(ctx context.Context, nc *nats.Conn) (int, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	st, err := js.Stream(ctx, natsjs.StreamName(alerting.DefaultSubjectPrefix))
	if err != nil {
		return 0, fmt.Errorf("looking up the stream: %w", err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("inferwatch.findings.>"))
	if err != nil {
		return 0, fmt.Errorf("counting the findings the stream holds: %w", err)
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n, nil
}

func orAll(pod string) string {
	if pod == "" {
		return "(all pods)"
	}
	return pod
}

// describe renders one finding for a person.
func describe(subject string, f alerting.Finding) string {
	where := f.Labels["model"]
	if p := f.Labels["pod"]; p != "" {
		where += " / " + p
	}
	return fmt.Sprintf("%s  %-8s %-18s %-45s value %.4g (expected %.4g, band %.4g…%.4g) score %.1f  [%s]",
		f.WindowEnd.UTC().Format("Mon 15:04"), f.Severity, f.Group+"/"+f.Rule, where,
		f.Value, f.Expected, f.Lower, f.Upper, f.Score, subject)
}

// summarize matches findings to the injected incidents: a finding matches
// when it is on the incident's model (and pod, when the incident has one)
// and its window overlaps the incident, give or take ten minutes.
func summarize(f *fleet.Fleet, got []alerting.Finding) {
	matched := make([]bool, len(got))
	for _, inc := range f.Incidents {
		var rulesHit []string
		seen := map[string]bool{}
		for i, fd := range got {
			if fd.Labels["model"] != inc.Model || (inc.Pod != "" && fd.Labels["pod"] != "" && fd.Labels["pod"] != inc.Pod) {
				continue
			}
			if fd.WindowEnd.Before(inc.Start) || fd.WindowStart.After(inc.End.Add(10*time.Minute)) {
				continue
			}
			matched[i] = true
			if !seen[fd.Rule] {
				seen[fd.Rule] = true
				rulesHit = append(rulesHit, fd.Rule)
			}
		}
		sort.Strings(rulesHit)
		verdict := "FOUND by " + strings.Join(rulesHit, ", ")
		if len(rulesHit) == 0 {
			verdict = "not found by the rules of this configuration"
		}
		fmt.Printf("   %-22s %-26s %-20s %s\n", inc.Kind, inc.Model, orAll(inc.Pod), verdict)
	}
	other := 0
	for i, fd := range got {
		if !matched[i] {
			other++
			if other == 1 {
				fmt.Println("   findings outside any injected incident:")
			}
			fmt.Println("   - " + describe("", fd))
		}
	}
	if other == 0 {
		fmt.Println("   no finding outside the injected incidents")
	}
}

// showForecasts prints the newest forecast of each series.
func showForecasts(fc map[string]alerting.ForecastData) {
	step(fmt.Sprintf("Forecasts (inferwatch.forecasts.*): the newest of %d series", len(fc)))
	keys := make([]string, 0, len(fc))
	for k := range fc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d := fc[k]
		if len(d.Points) == 0 {
			continue
		}
		last := d.Points[len(d.Points)-1]
		fallback := ""
		if d.Fallback != "" {
			fallback = "  (fallback: " + d.Fallback + ")"
		}
		fmt.Printf("   %-26s now %.3g; in %s: %.3g (%.0f%%: %.3g…%.3g), peak %.3g  model %s, recent MAE %.3g vs naive %.3g, coverage %.0f%%%s\n",
			d.Labels["model"], float64(d.LastValue), time.Duration(d.HorizonSeconds)*time.Second,
			float64(last.Mean), 100*d.Level, float64(last.Lower), float64(last.Upper), float64(d.Peak),
			d.Model, float64(d.Accuracy.MAE), float64(d.Accuracy.NaiveMAE), 100*float64(d.Accuracy.Coverage), fallback)
	}
}

// showScale prints the scale signals: each change of desired replicas
// over the backfill, then the newest.
func showScale(ss []alerting.ScaleData) {
	step(fmt.Sprintf("Scale signals (inferwatch.scale.*): %d", len(ss)))
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Time.Before(ss[j].Time) })
	for _, s := range ss {
		observed, previous := "observed unknown", "first decision"
		if s.CurrentKnown {
			observed = fmt.Sprintf("observed %d", s.CurrentReplicas)
		}
		if s.PreviousDesiredReplicas != nil {
			previous = fmt.Sprintf("previous %d", *s.PreviousDesiredReplicas)
		}
		fmt.Printf("   %s  %-14s desired %d (%s, %s)  tier %d. %s\n",
			s.Time.UTC().Format("Mon 15:04"), s.Target, s.DesiredReplicas, observed, previous, s.Tier, s.Reason)
	}
}

// showReport makes the daily report over the fleet, reading what the
// daemon published from the stream, and prints its files and what changed.
func showReport(ctx context.Context, bin, config, sourceURL, natsURL string) error {
	dir, err := os.MkdirTemp("", "inferwatch-demo-report-")
	if err != nil {
		return err
	}
	step(fmt.Sprintf("Report: %s report --config %s --name daily --out %s", bin, config, dir))
	cmd := exec.CommandContext(ctx, bin, "report", "--config", config, "--name", "daily",
		"--source.url", sourceURL, "--nats.url", natsURL, "--out", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("inferwatch report: %w", err)
	}
	for _, path := range strings.Fields(out.String()) {
		fmt.Printf("   %s\n", path)
		if !strings.HasSuffix(path, ".json") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var doc struct {
			Period  struct{ Start, End time.Time }
			Changes []struct{ Text string }
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		fmt.Printf("   what changed from %s to %s:\n", doc.Period.Start.UTC().Format("Mon 15:04"), doc.Period.End.UTC().Format("Mon 15:04 MST"))
		if len(doc.Changes) == 0 {
			fmt.Println("   - nothing crossed a threshold")
		}
		for _, c := range doc.Changes {
			fmt.Printf("   - %s\n", c.Text)
		}
	}
	fmt.Printf("   open %s in a browser: one file, no network needed\n", dir)
	return nil
}
