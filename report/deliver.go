package report

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
)

// EventType is the CloudEvents type of a report announcement.
const EventType = alerting.ReportEventType

// Subject is the subject reports named name are announced on.
func Subject(prefix, name string) string { return prefix + ".reports." + name }

// stampLayout dates a report's files by the end of its period in the
// report's zone, with the offset so that no two ends share a name.
const stampLayout = "2006-01-02T1504-0700"

// BaseName is the file name, without extension, of the report named name
// whose period ends at end in loc: daily-2026-11-25T0600+0100.
func BaseName(name string, end time.Time, loc *time.Location) string {
	return name + "-" + end.In(loc).Format(stampLayout)
}

// Result is a report made: its document, the files written (by format)
// and the files retention removed.
type Result struct {
	Document *Document
	Files    map[string]string
	Removed  []string
}

// Make builds the report of spec that its schedule makes at at (the
// period ends at the newest scheduled time not after at), writes its
// files, enforces retention, records the run and announces it.
func (r *Reporter) Make(ctx context.Context, spec Spec, at time.Time) (*Result, error) {
	began := time.Now()
	end := at
	if spec.Cron != nil {
		end = PeriodEnd(spec.Cron, at)
	}
	res, err := r.make(ctx, spec, end)
	if err != nil {
		r.failed.Inc()
		return nil, err
	}
	r.made.Inc()
	r.duration.UpdateDuration(began)
	return res, nil
}

func (r *Reporter) make(ctx context.Context, spec Spec, end time.Time) (*Result, error) {
	doc, err := r.Build(ctx, spec, end)
	if err != nil {
		return nil, err
	}
	files, err := Write(spec, doc)
	if err != nil {
		return nil, err
	}
	res := &Result{Document: doc, Files: files}
	removed, err := Retain(spec.OutputDir, spec.Name, spec.Keep)
	res.Removed = removed
	if err != nil {
		r.o.Logger.Warn("enforcing report retention", "report", spec.Name, "dir", spec.OutputDir, "err", err)
	}
	if err := SaveState(spec.OutputDir, spec.Name, doc.Period.End); err != nil {
		return res, err
	}
	if r.o.Publisher != nil {
		ev, err := NewEvent(doc, files, r.o.Source)
		if err == nil {
			err = r.o.Publisher.PublishEvent(ctx, Subject(r.o.Prefix, spec.Name), ev)
		}
		if err != nil {
			r.publishFail.Inc()
			r.o.Logger.Warn("announcing the report failed; its files are written", "report", spec.Name, "subject", Subject(r.o.Prefix, spec.Name), "err", err)
		}
	}
	r.o.Logger.Info("report made", "report", spec.Name, "period_end", doc.Period.End.Format(time.RFC3339),
		"models", len(doc.Models), "changes", len(doc.Changes), "files", strings.Join(sortedValues(files), ","), "removed", len(removed))
	return res, nil
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Write writes the formats of spec for doc into spec.OutputDir and
// returns their paths by format. Each file is written to a temporary name
// and renamed, so a reader never sees half a report.
func Write(spec Spec, doc *Document) (map[string]string, error) {
	if err := os.MkdirAll(spec.OutputDir, 0o755); err != nil {
		return nil, fmt.Errorf("report %s: creating the output directory: %w", spec.Name, err)
	}
	loc := spec.Location
	if loc == nil {
		loc = time.UTC
	}
	base := filepath.Join(spec.OutputDir, BaseName(spec.Name, doc.Period.End, loc))
	files := map[string]string{}
	for _, f := range spec.Formats {
		var data []byte
		var err error
		switch f {
		case "html":
			data, err = HTML(doc)
		case "json":
			data, err = JSON(doc)
		case "md":
			data = Markdown(doc)
		default:
			err = fmt.Errorf("unknown format %q", f)
		}
		if err != nil {
			return files, fmt.Errorf("report %s: %w", spec.Name, err)
		}
		path := base + "." + f
		if err := writeFile(path, data); err != nil {
			return files, fmt.Errorf("report %s: %w", spec.Name, err)
		}
		files[f] = path
	}
	return files, nil
}

func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// reportFile is one file of a report in an output directory.
type reportFile struct {
	path string
	end  time.Time
}

// listReports lists the files of the reports named name in dir.
func listReports(dir, name string) ([]reportFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []reportFile
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasPrefix(n, name+"-") {
			continue
		}
		ext := filepath.Ext(n)
		if !slices.Contains([]string{".html", ".json", ".md"}, ext) {
			continue
		}
		t, err := time.Parse(stampLayout, strings.TrimSuffix(strings.TrimPrefix(n, name+"-"), ext))
		if err != nil {
			continue // another report's, or not a report
		}
		out = append(out, reportFile{path: filepath.Join(dir, n), end: t})
	}
	return out, nil
}

// Retain keeps the newest keep reports named name in dir (all formats of
// a report count as one) and removes the older ones, returning what it
// removed.
func Retain(dir, name string, keep int) ([]string, error) {
	files, err := listReports(dir, name)
	if err != nil || keep <= 0 {
		return nil, err
	}
	var ends []time.Time
	seen := map[int64]bool{}
	for _, f := range files {
		if !seen[f.end.UnixMilli()] {
			seen[f.end.UnixMilli()] = true
			ends = append(ends, f.end)
		}
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i].After(ends[j]) })
	if len(ends) <= keep {
		return nil, nil
	}
	cut := ends[keep-1]
	var removed []string
	var errs []error
	for _, f := range files {
		if f.end.Before(cut) {
			if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, f.path)
		}
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

// state is what an output directory remembers of a report's runs.
type state struct {
	Report  string    `json:"report"`
	LastEnd time.Time `json:"last_period_end"`
}

func statePath(dir, name string) string { return filepath.Join(dir, "."+name+".state.json") }

// SaveState records that the report named name was made for the period
// ending at end.
func SaveState(dir, name string, end time.Time) error {
	b, _ := json.Marshal(state{Report: name, LastEnd: end.UTC()})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFile(statePath(dir, name), append(b, '\n')); err != nil {
		return fmt.Errorf("report %s: recording the run in %s: %w", name, dir, err)
	}
	return nil
}

// LastEnd is the end of the period of the newest report named name made
// into dir: from its state file, else from the newest report file; ok is
// false when there is none.
func LastEnd(dir, name string) (time.Time, bool, error) {
	b, err := os.ReadFile(statePath(dir, name))
	if err == nil {
		var s state
		if err := json.Unmarshal(b, &s); err == nil && !s.LastEnd.IsZero() {
			return s.LastEnd, true, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return time.Time{}, false, err
	}
	files, err := listReports(dir, name)
	if err != nil {
		return time.Time{}, false, err
	}
	var last time.Time
	for _, f := range files {
		if f.end.After(last) {
			last = f.end
		}
	}
	return last, !last.IsZero(), nil
}

// Headline is the summary a report's event carries.
type Headline struct {
	Schema      string            `json:"$schema"`
	Name        string            `json:"name"`
	Period      Period            `json:"period"`
	Comparisons []Period          `json:"comparisons"`
	Changes     []Change          `json:"changes"`
	Models      []ModelHeadline   `json:"models"`
	SLOs        []SLOHeadline     `json:"slos"`
	Anomalies   int               `json:"anomalies"`
	Alerts      int               `json:"alerts"`
	Files       map[string]string `json:"files"`
}

// ModelHeadline is a model's figures in a report's event.
type ModelHeadline struct {
	Name             string            `json:"name"`
	Labels           map[string]string `json:"labels"`
	TTFTP99          F                 `json:"ttft_p99_seconds"`
	E2EP99           F                 `json:"e2e_p99_seconds"`
	RequestsMean     F                 `json:"requests_per_second_mean"`
	RequestsPeak     F                 `json:"requests_per_second_peak"`
	Eta              F                 `json:"eta_current"`
	DecaySignificant bool              `json:"decay_significant"`
	Headroom         F                 `json:"capacity_headroom"`
}

// SLOHeadline is an SLO series' figures in a report's event.
type SLOHeadline struct {
	Name       string            `json:"name"`
	Labels     map[string]string `json:"labels"`
	SLIWindow  F                 `json:"sli_window"`
	BudgetLeft F                 `json:"budget_left"`
	Burn1h     F                 `json:"burn_rate_1h"`
	Burn24h    F                 `json:"burn_rate_24h"`
}

// Headlines summarises doc for its event.
func Headlines(doc *Document, files map[string]string) Headline {
	h := Headline{Schema: SchemaID, Name: doc.Name, Period: doc.Period, Comparisons: doc.Comparisons, Changes: doc.Changes,
		Models: []ModelHeadline{}, SLOs: []SLOHeadline{}, Anomalies: doc.Anomalies.Count, Alerts: doc.Alerts.Count, Files: files}
	for _, m := range doc.Models {
		mh := ModelHeadline{Name: m.Name, Labels: m.Labels, RequestsMean: m.Traffic.Requests.Mean, RequestsPeak: m.Traffic.Requests.Peak,
			Eta: m.Decay.EtaCurrent, DecaySignificant: m.Decay.Significant, Headroom: m.Capacity.Headroom, TTFTP99: F(math.NaN()), E2EP99: F(math.NaN())}
		for _, l := range m.Latency {
			switch l.Kind {
			case "ttft":
				mh.TTFTP99 = l.Quantiles[2].Value
			case "e2e":
				mh.E2EP99 = l.Quantiles[2].Value
			}
		}
		h.Models = append(h.Models, mh)
	}
	for _, s := range doc.SLOs {
		for _, ser := range s.Series {
			h.SLOs = append(h.SLOs, SLOHeadline{Name: s.Name, Labels: ser.Labels, SLIWindow: ser.SLIWindow, BudgetLeft: ser.BudgetLeft, Burn1h: ser.Burn1h, Burn24h: ser.Burn24h})
		}
	}
	return h
}

// NewEvent is the CloudEvent announcing doc and its files: type
// io.inferwatch.report.v1, its id stable over (name, period end).
func NewEvent(doc *Document, files map[string]string, source string) (alerting.Event, error) {
	if source == "" {
		source = alerting.DefaultEventSource
	}
	data, err := json.Marshal(Headlines(doc, files))
	if err != nil {
		return alerting.Event{}, fmt.Errorf("encoding the event of report %s: %w", doc.Name, err)
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("inferwatch.report.v1\x00%s\x00%d", doc.Name, doc.Period.End.UnixMilli())))
	ev := alerting.Event{SpecVersion: alerting.CloudEventsSpecVersion, ID: hex.EncodeToString(sum[:16]), Source: source,
		Type: EventType, Subject: doc.Name, Time: doc.Period.End.UTC(), DataContentType: "application/json", Data: data}
	return ev, ev.Validate()
}
