package headless

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const pngPixel = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82"

// TestOpenSeesRequestsAndRefusals checks the check itself: a page that
// loads an image from a server on 127.0.0.1 is seen requesting it, and the
// same page under a policy that forbids it is seen attempting and
// refusing it, without reaching the server.
func TestOpenSeesRequestsAndRefusals(t *testing.T) {
	b := Require(t)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte(pngPixel))
	}))
	defer srv.Close()
	dir := t.TempDir()
	page := func(name, head string) string {
		p := filepath.Join(dir, name)
		body := fmt.Sprintf(`<!DOCTYPE html><html><head><meta charset="utf-8">%s<title>t</title></head><body>
<p>hello</p><img src="%s/pixel.png" alt="">
<svg class="chart" id="c1" width="100" height="50"><path d="M 0 0 L 100 50" stroke="black"/></svg>
<svg class="chart" id="c2" width="100" height="50"><path d="" stroke="black"/></svg>
</body></html>`, head, srv.URL)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	open := page("open.html", "")
	pg, err := Open(context.Background(), open, Options{Browser: b, Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Requests) != 1 || !strings.HasPrefix(pg.Requests[0], srv.URL) || hits.Load() != 1 {
		t.Errorf("requests %q, server hits %d: want the one image", pg.Requests, hits.Load())
	}
	if len(pg.Charts) != 2 || pg.Charts[0].Drawn != 1 || pg.Charts[1].Drawn != 0 {
		t.Errorf("charts %+v: want c1 drawn, c2 not", pg.Charts)
	}
	if !bytes.HasPrefix(pg.PNG, []byte("\x89PNG")) || !strings.Contains(pg.Text, "hello") {
		t.Errorf("no screenshot (%d bytes) or text %q", len(pg.PNG), pg.Text)
	}
	locked := page("locked.html", `<meta http-equiv="Content-Security-Policy" content="default-src 'none'">`)
	pg, err = Open(context.Background(), locked, Options{Browser: b})
	if err != nil {
		t.Fatal(err)
	}
	// The attempt is still seen, though the policy kept it from the server.
	if len(pg.Requests) != 1 || hits.Load() != 1 {
		t.Errorf("under the policy: requests %q, server hits %d; want the attempt seen and refused", pg.Requests, hits.Load())
	}
	if !strings.Contains(strings.Join(pg.Log, "\n"), "Content Security Policy") {
		t.Errorf("the refusal was not logged: %q", pg.Log)
	}
}
