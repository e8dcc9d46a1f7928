package report_test

import (
	"bytes"
	"context"
	htmlpkg "html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/report"
	"github.com/inferwatch/inferwatch/report/headless"
)

// TestHTMLInChromium opens reports in a real headless Chromium: the page
// makes no request at all (its policy would refuse one, and none is even
// attempted), logs nothing, prints no NaN, and every chart has drawn
// paths. With -update the report of 22 Nov becomes docs/report.png.
func TestHTMLInChromium(t *testing.T) {
	browser := headless.Require(t)
	setup(t)
	cfg := loadConfig(t, t.TempDir())
	dir := t.TempDir()
	cases := []struct {
		name, report string
		end          int
		charts       int // at least
	}{
		{"surge", "daily", 23, 3 * 5},
		{"gap", "gap", 25, 3 * 4},
		{"empty", "daily", 30 + 10, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := spec(t, cfg, tc.report)
			end := day(tc.end)
			if tc.end > 30 {
				end = day(30).AddDate(0, 0, tc.end-30)
			}
			doc, err := reporter(t, cfg, tc.report == "daily").Build(context.Background(), sp, end)
			if err != nil {
				t.Fatal(err)
			}
			html, err := report.HTML(doc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(html, []byte(`http-equiv="Content-Security-Policy" content="`+htmlpkg.EscapeString(report.ContentSecurityPolicy)+`"`)) {
				t.Error("the page does not declare its content security policy")
			}
			path := filepath.Join(dir, tc.name+".html")
			if err := os.WriteFile(path, html, 0o644); err != nil {
				t.Fatal(err)
			}
			o := headless.Options{Browser: browser, Screenshot: true}
			if tc.name == "surge" && *update {
				o.Height = 2600
			}
			pg, err := headless.Open(context.Background(), path, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(pg.Requests) > 0 {
				t.Errorf("the page made %d requests: %q", len(pg.Requests), pg.Requests)
			}
			if len(pg.Log) > 0 {
				t.Errorf("the browser logged: %q", pg.Log)
			}
			if len(pg.Charts) < tc.charts {
				t.Errorf("%d charts, want at least %d", len(pg.Charts), tc.charts)
			}
			for _, c := range pg.Charts {
				if c.Drawn == 0 || c.Width < 300 || c.Height < 100 {
					t.Errorf("chart %s: %d of %d paths drawn, %.0f×%.0f px", c.ID, c.Drawn, c.Paths, c.Width, c.Height)
				}
			}
			for _, bad := range []string{"NaN", "Inf", "undefined", "<no value>"} {
				if strings.Contains(pg.Text, bad) {
					t.Errorf("the page shows %q", bad)
				}
			}
			if !strings.Contains(pg.Text, "What changed and why") || !strings.Contains(pg.Title, "inferwatch report") {
				t.Errorf("title %q; the page lacks its summary", pg.Title)
			}
			if len(pg.PNG) < 1000 {
				t.Errorf("screenshot of %d bytes", len(pg.PNG))
			}
			os.WriteFile(filepath.Join(dir, tc.name+".png"), pg.PNG, 0o644)
			if tc.name == "surge" && *update {
				if err := os.WriteFile(filepath.Join("..", "docs", "report.png"), pg.PNG, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if os.Getenv("INFERWATCH_REPORT_KEEP") != "" {
				os.WriteFile(filepath.Join(os.Getenv("INFERWATCH_REPORT_KEEP"), tc.name+".png"), pg.PNG, 0o644)
				os.WriteFile(filepath.Join(os.Getenv("INFERWATCH_REPORT_KEEP"), tc.name+".html"), html, 0o644)
			}
		})
	}
}
