// Package headless opens an HTML file in a real headless Chromium and
// reports what a person would see and what the page did: a PNG of the
// whole page, every network request it made, what the browser logged
// (Content-Security-Policy refusals included), and the drawn paths of each
// chart. It speaks the Chrome DevTools Protocol over --remote-debugging-pipe
// (JSON messages separated by NUL bytes on file descriptors 3 and 4), so it
// needs no WebSocket and no port.
package headless

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvBinary names a variable holding the browser to use.
const EnvBinary = "INFERWATCH_CHROMIUM"

// ErrNoBrowser means no Chromium was found.
var ErrNoBrowser = errors.New("no Chromium found: install Debian's chromium (apt-get install chromium) or set " + EnvBinary)

// Find returns the browser: $INFERWATCH_CHROMIUM, else chromium,
// chromium-browser, google-chrome or google-chrome-stable on PATH.
func Find() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// EnvRequire names the variable that turns a missing browser from a
// skipped test into a failed one (CI sets it to 1).
const EnvRequire = "INFERWATCH_REQUIRE_CHROMIUM"

// Require returns the browser for a test. Without one it skips the test
// and says so clearly, or fails it when INFERWATCH_REQUIRE_CHROMIUM=1.
func Require(t testing.TB) string {
	t.Helper()
	b, err := Find()
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s=1 but %v", EnvRequire, err)
		}
		t.Skipf("SKIPPING: this test opens the report in a real browser and %v (set %s=1 to make this a failure)", err, EnvRequire)
	}
	return b
}

// Flags are the command-line flags the browser runs with: headless, no
// sandbox (tests run as root), and none of its own background traffic.
var Flags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
	"--disable-default-apps", "--hide-scrollbars", "--mute-audio", "--no-default-browser-check", "--remote-debugging-pipe"}

// Chart is what the page drew for one svg.chart element.
type Chart struct {
	ID string `json:"id"`
	// Paths counts its path elements and Drawn those with a visible
	// length or area.
	Paths int `json:"paths"`
	Drawn int `json:"drawn"`
	// Width and Height are its size on the page in CSS pixels.
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// Page is what Open saw.
type Page struct {
	URL string
	// Requests are the URLs the page requested besides itself.
	Requests []string
	// Log holds what the browser logged: console messages, CSP refusals.
	Log []string
	// Charts are the page's svg.chart elements; Text its visible text.
	Charts []Chart
	Text   string
	Title  string
	// PNG is a screenshot of the whole page.
	PNG []byte
}

// Options configure Open.
type Options struct {
	// Browser is the binary (default: Find).
	Browser string
	// Width of the viewport in CSS pixels (default 1100).
	Width int
	// Timeout bounds the whole session (default 60s).
	Timeout time.Duration
	// Screenshot asks for the PNG; Height, when > 0, keeps only the top
	// of the page that high in CSS pixels.
	Screenshot bool
	Height     int
}

// Open loads the file (or URL) in a fresh headless Chromium and returns
// what the page did and drew.
func Open(ctx context.Context, target string, o Options) (*Page, error) {
	if o.Browser == "" {
		b, err := Find()
		if err != nil {
			return nil, err
		}
		o.Browser = b
	}
	if o.Width == 0 {
		o.Width = 1100
	}
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	u := target
	if !strings.Contains(target, "://") {
		abs, err := filepath.Abs(target)
		if err != nil {
			return nil, err
		}
		u = (&url.URL{Scheme: "file", Path: abs}).String()
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	profile, err := os.MkdirTemp("", "inferwatch-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)

	toChrome, ourW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ourR, fromChrome, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, Flags...), "--user-data-dir="+profile, "about:blank")
	cmd := exec.CommandContext(ctx, o.Browser, args...)
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome} // fds 3 and 4
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.Browser, err)
	}
	toChrome.Close()
	fromChrome.Close()
	c := &conn{w: ourW, pending: map[int]chan reply{}, events: make(chan event, 1024)}
	go c.read(ourR)
	page, err := c.session(ctx, u, o)
	c.send(ctx, "", "Browser.close", nil)
	ourW.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	ourR.Close()
	if err != nil {
		tail := stderr.String()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return nil, fmt.Errorf("headless %s on %s: %w (browser stderr: %s)", filepath.Base(o.Browser), u, err, strings.TrimSpace(tail))
	}
	return page, nil
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type event struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

// conn is one DevTools connection over the pipe.
type conn struct {
	w       io.Writer
	mu      sync.Mutex
	id      int
	pending map[int]chan reply
	events  chan event
	readErr error
}

func (c *conn) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			close(c.events)
			return
		}
		msg = msg[:len(msg)-1]
		var head struct {
			ID int `json:"id"`
		}
		json.Unmarshal(msg, &head)
		if head.ID != 0 {
			var rp reply
			json.Unmarshal(msg, &rp)
			c.mu.Lock()
			ch := c.pending[head.ID]
			delete(c.pending, head.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- rp
			}
			continue
		}
		var ev event
		if json.Unmarshal(msg, &ev) == nil && ev.Method != "" {
			select {
			case c.events <- ev:
			default: // a flood of events: keep reading replies
			}
		}
	}
}

// send calls method and waits for its reply.
func (c *conn) send(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.id++
	id := c.id
	ch := make(chan reply, 1)
	c.pending[id] = ch
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	_, err := c.w.Write(append(b, 0))
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case rp, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the browser closed the connection", method)
		}
		if rp.Error != nil {
			return nil, fmt.Errorf("%s: %s (%d)", method, rp.Error.Message, rp.Error.Code)
		}
		return rp.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// chartsJS measures each chart's paths in the page.
const chartsJS = `JSON.stringify(Array.from(document.querySelectorAll('svg.chart')).map(function (s) {
  var ps = Array.from(s.querySelectorAll('path'));
  var drawn = ps.filter(function (p) {
    var d = p.getAttribute('d') || '';
    if (d.length < 4) return false;
    var b = p.getBBox();
    return p.getTotalLength() > 0 && (b.width > 0 || b.height > 0);
  }).length;
  var r = s.getBoundingClientRect();
  return {id: s.id, paths: ps.length, drawn: drawn, width: r.width, height: r.height};
}))`

func (c *conn) session(ctx context.Context, u string, o Options) (*Page, error) {
	res, err := c.send(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return nil, err
	}
	var tgt struct {
		TargetID string `json:"targetId"`
	}
	json.Unmarshal(res, &tgt)
	res, err = c.send(ctx, "", "Target.attachToTarget", map[string]any{"targetId": tgt.TargetID, "flatten": true})
	if err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(res, &att)
	s := att.SessionID
	for _, m := range []string{"Network.enable", "Page.enable", "Log.enable", "Runtime.enable"} {
		if _, err := c.send(ctx, s, m, map[string]any{}); err != nil {
			return nil, err
		}
	}
	if _, err := c.send(ctx, s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": o.Width, "height": 900, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		return nil, err
	}
	page := &Page{URL: u}
	if _, err := c.send(ctx, s, "Page.navigate", map[string]any{"url": u}); err != nil {
		return nil, err
	}
	// Collect events until the page has loaded and gone quiet.
	loaded := false
	var quiet <-chan time.Time
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				return nil, errors.New("the browser closed the connection while the page loaded")
			}
			if ev.SessionID != s {
				continue
			}
			page.observe(ev)
			if ev.Method == "Page.loadEventFired" {
				loaded = true
				quiet = time.After(500 * time.Millisecond)
			}
		case <-quiet:
			if loaded {
				goto measured
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s to load: %w", u, ctx.Err())
		}
	}
measured:
	eval := func(expr string) (string, error) {
		res, err := c.send(ctx, s, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
		if err != nil {
			return "", err
		}
		var r struct {
			Result struct {
				Value any `json:"value"`
			} `json:"result"`
			ExceptionDetails json.RawMessage `json:"exceptionDetails"`
		}
		json.Unmarshal(res, &r)
		if len(r.ExceptionDetails) > 0 {
			return "", fmt.Errorf("evaluating in the page: %s", r.ExceptionDetails)
		}
		v, _ := r.Result.Value.(string)
		return v, nil
	}
	js, err := eval(chartsJS)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(js), &page.Charts); err != nil {
		return nil, fmt.Errorf("reading the charts: %w", err)
	}
	if page.Text, err = eval("document.body ? document.body.innerText : ''"); err != nil {
		return nil, err
	}
	if page.Title, err = eval("document.title"); err != nil {
		return nil, err
	}
	if o.Screenshot {
		res, err := c.send(ctx, s, "Page.getLayoutMetrics", nil)
		if err != nil {
			return nil, err
		}
		var lm struct {
			CSSContentSize struct {
				Height float64 `json:"height"`
			} `json:"cssContentSize"`
		}
		json.Unmarshal(res, &lm)
		h := int(lm.CSSContentSize.Height)
		h = max(300, min(h, 30000))
		if o.Height > 0 {
			h = min(h, o.Height)
		}
		if _, err := c.send(ctx, s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": o.Width, "height": h, "deviceScaleFactor": 1, "mobile": false}); err != nil {
			return nil, err
		}
		shotParams := map[string]any{"format": "png", "captureBeyondViewport": true}
		if o.Height > 0 {
			shotParams["clip"] = map[string]any{"x": 0, "y": 0, "width": o.Width, "height": h, "scale": 1}
		}
		res, err = c.send(ctx, s, "Page.captureScreenshot", shotParams)
		if err != nil {
			return nil, err
		}
		var shot struct {
			Data string `json:"data"`
		}
		json.Unmarshal(res, &shot)
		if page.PNG, err = base64.StdEncoding.DecodeString(shot.Data); err != nil {
			return nil, err
		}
	}
	// Drain what arrived while measuring.
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				return page, nil
			}
			if ev.SessionID == s {
				page.observe(ev)
			}
		default:
			return page, nil
		}
	}
}

// observe records a request or a log entry.
func (p *Page) observe(ev event) {
	switch ev.Method {
	case "Network.requestWillBeSent":
		var r struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		json.Unmarshal(ev.Params, &r)
		if r.Request.URL != p.URL && r.Request.URL != "about:blank" {
			p.Requests = append(p.Requests, r.Request.URL)
		}
	case "Log.entryAdded":
		var r struct {
			Entry struct {
				Source, Level, Text, URL string
			} `json:"entry"`
		}
		json.Unmarshal(ev.Params, &r)
		p.Log = append(p.Log, r.Entry.Level+" "+r.Entry.Source+": "+r.Entry.Text)
	case "Runtime.consoleAPICalled", "Runtime.exceptionThrown":
		p.Log = append(p.Log, ev.Method+": "+string(ev.Params))
	}
}
