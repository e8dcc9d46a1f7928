package rulefmt

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics and that what it returns holds
// its promises: either a configuration whose values passed every check, or
// Errors with at least one positioned error.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(configDir, "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("source: &s {<<: *s}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := outputs.Parse(data, "f.yaml")
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error is not a non-empty Errors: %#v", err)
			}
			lines := bytes.Count(data, []byte("\n")) + 1
			for _, e := range es {
				if e.Pos.File != "f.yaml" || e.Msg == "" {
					t.Fatalf("error without file or message: %+v", e)
				}
				if e.Pos.Line < 1 || e.Pos.Column < 1 || (e.Pos.Line > lines && len(data) <= MaxFileSize) {
					t.Fatalf("error without a position in the file (of %d lines): %+v", lines, e)
				}
			}
			if cfg != nil {
				t.Fatal("config returned with an error")
			}
			return
		}
		if cfg.Source.URL == "" || cfg.Source.Timeout <= 0 || cfg.Source.EvaluationDelay < 0 {
			t.Fatalf("bad source accepted: %+v", cfg.Source)
		}
		if cfg.NATS.SubjectPrefix == "" || cfg.NATS.Stream == "" || cfg.NATS.DuplicateWindow <= 0 {
			t.Fatalf("bad nats accepted: %+v", cfg.NATS)
		}
		if len(cfg.Groups) == 0 {
			t.Fatal("no groups accepted")
		}
		for _, g := range cfg.Groups {
			if g.Name == "" || g.Interval <= 0 || len(g.Rules) == 0 {
				t.Fatalf("bad group accepted: %+v", g)
			}
			for _, r := range g.Rules {
				if specOf[*Correlate](r) != nil && (specOf[*Correlate](r).X == "" || specOf[*Correlate](r).Y == "" || r.Expr != "") {
					t.Fatalf("bad correlate rule accepted: %+v", specOf[*Correlate](r))
				}
				ownQueries := specOf[*Correlate](r) != nil || specOf[*Knee](r) != nil || (specOf[*Imbalance](r) != nil && specOf[*Imbalance](r).Across == "") || specOf[*Scale](r) != nil || specOf[*Forecast](r) != nil
				// An anomaly rule's lookback may be unset (0: its detector's
				// own) and is not bounded in points (its history is fetched
				// in parts); every other kind has a window within them.
				windowOK := r.Lookback > 0 && r.Step <= r.Lookback && r.Lookback/r.Step <= MaxPointsPerQuery
				if r.Kind == KindAnomaly {
					windowOK = r.Lookback == 0 || r.Step <= r.Lookback
				}
				if r.Name == "" || (r.Expr == "" && !ownQueries) || !windowOK || r.Lookback < 0 || r.Step <= 0 ||
					r.For < 0 || (r.Kind == KindAnomaly && specOf[*Detector](r).Name == "") || r.Spec == nil || r.Spec.Kind() != r.Kind {
					t.Fatalf("bad rule accepted: %+v", r)
				}
			}
		}
	})
}
