package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/internal/dur"
	redactpkg "github.com/inferwatch/inferwatch/internal/redact"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

const tailHelp = `Usage: inferwatch tail [--config FILE] [--nats.url URL] [flags]

Prints the events inferwatch publishes on NATS JetStream as they arrive, one
line each, for people:

  TIME  STATUS  SEVERITY  GROUP/RULE  SERIES  WHAT

  alert     status (pending, firing, repeat, resolved, inactive), severity, the value
            against the band (above, below or within lower…upper), the
            expected value, the score, and for how long it has been anomalous
  finding   its kind (anomaly, correlation, decay, …) in the status column,
            then as an alert
  forecast  now (the last value), +horizon: the mean with its interval,
            the peak and when, the upper peak, the model
  scale     the new decision of desired replicas (the observed replicas and
            the previous decision), the tier and the reason
  incident  a block: its status (opened, updated, resolved), the unit, the
            diagnosis, the alerts and pods, then what happened in order,
            the evidence and what to check, indented

For example:

  2026-11-25T14:34:00Z  firing      critical  latency/ttft_spike  ttft{pod="p0"}  50 above 9.712…10.91 (expected 10.31), score 41.23, for 2m
  2026-11-25T14:34:00Z  forecast              forecasting/request_rate  {model="qwen2.5-32b-instruct"}  now 6.891, +10m 7.123 (90% 6.2…8.04), peak 7.4 at +5m (upper 8.3), model auto
  2026-11-25T14:34:00Z  scale                 forecasting/vllm-qwen-32b  {model="qwen2.5-32b-instruct"}  desired 3 (observed 2, previous 2), tier 3. Forecast peak 19.9 req/s (upper 20.6) by 14:44 UTC needs 3 replicas at 7 req/s each: new decision 3, up from the previous decision 2.

TIME is the event's time in UTC; a number the daemon could not define (a
one-sided band, no estimate) is shown as —. With --json each event is
printed as it is stored instead: its CloudEvents envelope, one JSON object a
line (see docs/schemas for the schemas).

Without --since only events published from now on are printed; --since 1h
first replays what the stream stored in the last hour (or since an RFC 3339
time), in order, then follows. It reads through a JetStream ordered
consumer: nothing is acknowledged or removed, and any number of tails can
run beside the daemon.

Where: --nats.url, or the nats section of --config FILE: its url, subject_prefix,
stream, credentials (user and password, token, creds_file or nkey_seed_file)
and tls; with no url, the daemon's embedded server at nats.embedded.listen
with nats.embedded's user and password or token. Else ` + defaultTailURL + `.

  inferwatch tail --config examples/inferwatch.yml --since 1h
  inferwatch tail --nats.url nats://nats.internal:4222 --subject 'inferwatch.alerts.>'
  inferwatch tail --since 24h --json --count 100 > events.jsonl

Exit status: 0 after --count events or an interrupt, 1 when NATS or the
stream cannot be read, 2 on a usage error.

Flags:
`

// defaultTailURL is where tail looks without --nats.url or --config: the
// embedded server's default address.
const defaultTailURL = "nats://" + natsjs.DefaultEmbeddedListen

type tailFlags struct {
	configFile  string
	natsURL     string
	prefix      string
	stream      string
	subjects    stringList
	jsonOut     bool
	since       sinceFlag
	count       int
	color       string
	connectWait time.Duration
}

// stringList is a flag that may be repeated.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// sinceFlag is how far back to replay: a duration before now (MetricsQL
// syntax, 30m, 7d) or an RFC 3339 time.
type sinceFlag struct {
	set bool
	ago time.Duration
	at  time.Time
}

func (f *sinceFlag) String() string {
	switch {
	case !f.set:
		return ""
	case !f.at.IsZero():
		return f.at.Format(time.RFC3339)
	}
	return f.ago.String()
}

func (f *sinceFlag) Set(s string) error {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		*f = sinceFlag{set: true, at: t}
		return nil
	}
	var d durationFlag
	if err := d.Set(s); err != nil {
		return fmt.Errorf("%q is neither a duration (30m, 1h, 7d) nor an RFC 3339 time (2026-11-25T14:00:00Z)", s)
	}
	*f = sinceFlag{set: true, ago: d.d}
	return nil
}

// start is the replay's start at now.
func (f *sinceFlag) start(now time.Time) time.Time {
	if !f.at.IsZero() {
		return f.at
	}
	return now.Add(-f.ago)
}

func cmdTail(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f tailFlags
	fs := newOfflineFlagSet("inferwatch tail", tailHelp)
	fs.StringVar(&f.configFile, "config", "", "take the nats section (url, subject_prefix, stream, credentials, tls) of this configuration `FILE`")
	fs.StringVar(&f.natsURL, "nats.url", "", "the NATS server (default: the config's, else "+defaultTailURL+")")
	fs.StringVar(&f.prefix, "nats.subject-prefix", "", "the subject prefix (default: the config's, else inferwatch)")
	fs.StringVar(&f.stream, "nats.stream", "", "the JetStream stream (default: the config's, else the prefix upper-cased)")
	fs.Var(&f.subjects, "subject", "print only the events on `SUBJECT`, wildcards allowed (e.g. 'inferwatch.alerts.>', 'inferwatch.alerts.capacity.*'); repeat for more (default <prefix>.>)")
	fs.BoolVar(&f.jsonOut, "json", false, "print each event's CloudEvents envelope as stored, one JSON object a line")
	fs.Var(&f.since, "since", "first replay what the stream stored since this `DURATION` ago (30m, 7d) or RFC 3339 time, then follow")
	fs.IntVar(&f.count, "count", 0, "stop after `N` events (0: never)")
	fs.StringVar(&f.color, "color", "auto", "colour the lines: auto (when stdout is a terminal and NO_COLOR is unset), always or never")
	fs.DurationVar(&f.connectWait, "nats.connect-timeout", 5*time.Second, "how long to wait for NATS to answer")
	if code, done := parseOfflineFlags(fs, args, stdout, stderr); done {
		return code
	}
	if f.count < 0 {
		return usageError(stderr, fs, fmt.Sprintf("--count %d: want 0 (no limit) or more", f.count))
	}
	colour, ok := colorMode(f.color, stdout)
	if !ok {
		return usageError(stderr, fs, fmt.Sprintf("--color %q: want auto, always or never", f.color))
	}
	if f.natsURL != "" {
		if errs := rulefmt.CheckNATSURL(f.natsURL); len(errs) > 0 {
			return usageError(stderr, fs, "--nats.url: "+errors.Join(errs...).Error())
		}
	}
	if f.prefix != "" {
		if err := alerting.ValidSubject(f.prefix); err != nil {
			return usageError(stderr, fs, "--nats.subject-prefix: "+err.Error())
		}
	}
	for _, s := range f.subjects {
		if !server.IsValidSubject(s) {
			return usageError(stderr, fs, fmt.Sprintf("--subject %q is not a NATS subject: tokens separated by '.', where '*' stands for one token and a last '>' for the rest", s))
		}
	}
	t, err := f.target()
	if err != nil {
		fmt.Fprintln(stderr, "inferwatch tail:", err)
		return 1
	}
	p := &tailPrinter{w: stdout, json: f.jsonOut, colour: colour}
	if err := tail(ctx, t, f, p, stderr); err != nil {
		fmt.Fprintln(stderr, "inferwatch tail:", err)
		return 1
	}
	return 0
}

// tailTarget is what tail reads: a server, a stream and subjects.
type tailTarget struct {
	url, shown string // shown: redacted
	stream     string
	prefix     string
	subjects   []string
	// from says where the URL came from, for errors; auth where the
	// credentials did ("" when there are none).
	from, auth string
	// opts authenticate the client and set up TLS.
	opts []nats.Option
}

// target resolves the flags and the configuration into what to read.
func (f tailFlags) target() (tailTarget, error) {
	t := tailTarget{url: defaultTailURL, prefix: alerting.DefaultSubjectPrefix, from: "the default; give --nats.url or --config"}
	if f.configFile != "" {
		cfg, err := loader.Load(f.configFile)
		if err != nil {
			return t, err
		}
		n := cfg.NATS
		t.prefix, t.stream = n.SubjectPrefix, n.Stream
		// The daemon's own credentials: those of its embedded server when
		// it has no url, as it connects itself.
		auth, where := natsAuth(n, f.configFile)
		if t.opts, err = auth.Options(); err != nil {
			return t, fmt.Errorf("%s: %w", f.configFile, err)
		}
		if len(t.opts) > 0 {
			t.auth = where
		}
		tc, err := natsTLS(cfg)
		if err != nil {
			return t, err
		}
		if tc != nil {
			t.opts = append(t.opts, nats.Secure(tc))
		}
		switch {
		case f.natsURL != "":
		case n.URL != "":
			t.url, t.from = n.URL, "nats.url in "+f.configFile
		default:
			u, err := embeddedURL(n.Embedded.Listen)
			if err != nil {
				return t, fmt.Errorf("%s: %w", f.configFile, err)
			}
			t.url, t.from = u, "nats.embedded.listen in "+f.configFile+" (the daemon's embedded server)"
		}
	}
	if f.natsURL != "" {
		t.url, t.from = f.natsURL, "--nats.url"
	}
	if f.prefix != "" {
		if f.stream == "" && (f.configFile == "" || t.stream == natsjs.StreamName(t.prefix)) {
			t.stream = "" // follows the new prefix, as the daemon's default does
		}
		t.prefix = f.prefix
	}
	if f.stream != "" {
		t.stream = f.stream
	}
	if t.stream == "" {
		t.stream = natsjs.StreamName(t.prefix)
	}
	t.subjects = f.subjects
	if len(t.subjects) == 0 {
		t.subjects = []string{t.prefix + ".>"}
	}
	t.shown = redactpkg.URL(t.url)
	return t, nil
}

// embeddedURL is the client URL of an embedded server listening on listen.
func embeddedURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("nats.embedded.listen %q: want host:port: %w", listen, err)
	}
	if port == "0" {
		return "", fmt.Errorf("nats.embedded.listen %q picks a free port at each start: give --nats.url with the port the daemon logged (\"embedded NATS server with JetStream started\" url=…)", listen)
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, port), nil
}

// tail follows the stream and prints its events until ctx is done or
// f.count events were printed.
func tail(ctx context.Context, t tailTarget, f tailFlags, p *tailPrinter, stderr io.Writer) error {
	o := natsjs.FollowOptions{URL: t.url, Options: t.opts, Name: "inferwatch-tail", Stream: t.stream, Subjects: t.subjects, Timeout: f.connectWait,
		Disconnected: func(reason string) {
			fmt.Fprintf(stderr, "inferwatch tail: disconnected from NATS at %s (%s); reconnecting\n", t.shown, reason)
		},
		Reconnected: func() { fmt.Fprintf(stderr, "inferwatch tail: reconnected to NATS at %s\n", t.shown) },
	}
	if f.since.set {
		o.Since = f.since.start(time.Now())
	}
	n := 0
	err := natsjs.Follow(ctx, o, func(subject string, data []byte) (bool, error) {
		printed, err := p.print(subject, data)
		if errors.Is(err, errNotEvent) {
			fmt.Fprintf(stderr, "inferwatch tail: skipping a message on %s: %v\n", subject, err)
			return false, nil
		}
		if printed {
			n++
		}
		return f.count > 0 && n >= f.count, err
	})
	return followError(t, err)
}

// followError says what to check when the stream cannot be followed.
func followError(t tailTarget, err error) error {
	var ce *natsjs.ConnectError
	var nf *natsjs.StreamNotFoundError
	var se *natsjs.SubjectError
	switch {
	case errors.As(err, &ce) && ce.Refused:
		creds := "the user and password or token in the URL (from " + t.from + ")"
		if t.auth != "" {
			creds = "the credentials in " + t.auth
		}
		return fmt.Errorf("NATS at %s refused the connection (%s): check %s", t.shown, ce.Reason, creds)
	case errors.As(err, &ce):
		return fmt.Errorf("cannot reach NATS at %s (%s). Check that a NATS server with JetStream runs there (the daemon's embedded one, when its configuration has no nats.url) and the URL (from %s)", t.shown, ce.Reason, t.from)
	case errors.As(err, &nf) && nf.HeldBy != "":
		return fmt.Errorf("NATS at %s has no stream %s; stream %s holds %s: give --nats.stream %s (or set nats.stream)", t.shown, t.stream, nf.HeldBy, nf.Subject, nf.HeldBy)
	case errors.As(err, &nf) && len(nf.Streams) > 0:
		return fmt.Errorf("NATS at %s has no stream %s, nor one holding %s; its streams: %s. Give --nats.stream and --nats.subject-prefix (or --config FILE) as the daemon publishes", t.shown, t.stream, nf.Subject, strings.Join(nf.Streams, ", "))
	case errors.As(err, &nf):
		return fmt.Errorf("NATS at %s has no stream %s yet: the daemon creates it over %s.> when it starts (inferwatch run --config FILE with this nats.url), or create it: nats stream add %s --subjects '%s.>' --storage file", t.shown, t.stream, t.prefix, t.stream, t.prefix)
	case errors.As(err, &se):
		return fmt.Errorf("--subject %s: stream %s on %s holds only %s, so nothing could match; inferwatch publishes under %s.> (findings, alerts, forecasts, scale, reports)", se.Subject, t.stream, t.shown, strings.Join(se.StreamSubjects, ", "), t.prefix)
	}
	return err
}

func redactErr(err error, url string) string {
	if err == nil {
		return ""
	}
	return redactpkg.Text(err.Error(), url)
}

// colorMode says whether to colour the output written to w.
func colorMode(mode string, w io.Writer) (on, ok bool) {
	switch mode {
	case "always":
		return true, true
	case "never":
		return false, true
	case "auto":
		return isTerminal(w) && !isNullDevice(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb", true
	}
	return false, false
}

// isNullDevice reports whether w is the null device, a character device
// that is no terminal.
func isNullDevice(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	null, nerr := os.Stat(os.DevNull)
	return err == nil && nerr == nil && os.SameFile(fi, null)
}

// errNotEvent marks a message that is not a CloudEvent: it is skipped.
var errNotEvent = errors.New("not a CloudEvent")

// tailPrinter writes events as lines.
type tailPrinter struct {
	w      io.Writer
	json   bool
	colour bool
}

// print writes the event of one message; printed is false for a message
// that is not a CloudEvent (errNotEvent).
func (p *tailPrinter) print(subject string, body []byte) (printed bool, err error) {
	var ev alerting.Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.SpecVersion == "" || ev.Type == "" {
		if err == nil {
			err = errors.New("no specversion or type")
		}
		return false, fmt.Errorf("%w: %v (%d bytes: %.60q)", errNotEvent, err, len(body), body)
	}
	var line []byte
	if p.json {
		var buf bytes.Buffer
		if err := json.Compact(&buf, body); err != nil {
			return false, fmt.Errorf("%w: %v", errNotEvent, err)
		}
		line = append(buf.Bytes(), '\n')
	} else {
		line = []byte(p.line(subject, ev) + "\n")
	}
	if _, err := p.w.Write(line); err != nil {
		return false, fmt.Errorf("writing: %w", err)
	}
	return true, nil
}

// ANSI colours.
const (
	ansiReset   = "\x1b[0m"
	ansiBold    = "\x1b[1m"
	ansiDim     = "\x1b[2m"
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiBlue    = "\x1b[34m"
	ansiMagenta = "\x1b[35m"
	ansiCyan    = "\x1b[36m"
	ansiBoldRed = "\x1b[1;31m"
)

func (p *tailPrinter) paint(code, s string) string {
	if !p.colour || code == "" || s == "" {
		return s
	}
	return code + s + ansiReset
}

// col pads s to width, then paints it (the padding stays outside).
func (p *tailPrinter) col(code, s string, width int) string {
	pad := ""
	if n := width - len([]rune(s)); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	return p.paint(code, s) + pad
}

var statusColours = map[string]string{
	string(alerting.StatusPending):  ansiYellow,
	string(alerting.StatusFiring):   ansiBoldRed,
	string(alerting.StatusRepeat):   ansiMagenta,
	string(alerting.StatusResolved): ansiGreen,
	string(alerting.StatusInactive): ansiGreen,
}

func severityColour(s string) string {
	switch s {
	case "critical":
		return ansiRed
	case "warning":
		return ansiYellow
	}
	return ansiCyan
}

// line renders one event for people.
func (p *tailPrinter) line(subject string, ev alerting.Event) string {
	head := func(status, statusColour, severity, rule, series string) string {
		sev := p.col("", "", 8)
		if severity != "" {
			sev = p.col(severityColour(severity), severity, 8)
		}
		return p.paint(ansiDim, ev.Time.UTC().Format(time.RFC3339)) + "  " + p.col(statusColour, status, 11) + " " + sev + "  " +
			p.paint(ansiBold, rule) + "  " + series + "  "
	}
	data, err := alerting.DecodeData(ev)
	switch d := data.(type) {
	case *alerting.Finding:
		return head(d.Kind, ansiBold, d.Severity, d.Group+"/"+d.Rule, d.Series) +
			p.measure(d.Value, d.Expected, d.Lower, d.Upper, d.Score, d.WindowEnd.Sub(d.WindowStart))
	case *alerting.AlertData:
		end := d.Time
		if d.ResolvedAt != nil {
			end = *d.ResolvedAt
		}
		line := head(string(d.Status), statusColours[string(d.Status)], d.Severity, d.Group+"/"+d.Rule, d.Series) +
			p.measure(float64(d.Value), float64(d.Expected), float64(d.Lower), float64(d.Upper), float64(d.Score), end.Sub(d.ActiveAt))
		if d.Reason == alerting.ReasonAbsent && d.LastSeenAt != nil {
			line += fmt.Sprintf("; absent since %s (last %s)", d.LastSeenAt.UTC().Format(time.RFC3339), fmtNumber(float64(d.LastValue)))
		}
		return line
	case *alerting.ForecastData:
		s := "now " + fmtNumber(float64(d.LastValue))
		if n := len(d.Points); n > 0 {
			last := d.Points[n-1]
			s += fmt.Sprintf(", +%s %s", dur.Format(time.Duration(d.HorizonSeconds*float64(time.Second)).Round(time.Second)), fmtNumber(float64(last.Mean)))
			if defined(float64(last.Lower)) || defined(float64(last.Upper)) {
				s += fmt.Sprintf(" (%s%% %s…%s)", strconv.FormatFloat(100*d.Level, 'g', -1, 64), fmtNumber(float64(last.Lower)), fmtNumber(float64(last.Upper)))
			}
		}
		s += fmt.Sprintf(", peak %s at +%s", fmtNumber(float64(d.Peak)), dur.Format(d.PeakTime.Sub(d.Origin).Round(time.Second)))
		if defined(float64(d.UpperPeak)) {
			s += " (upper " + fmtNumber(float64(d.UpperPeak)) + ")"
		}
		s += ", model " + d.Model
		if d.Fallback != "" {
			s += " (fallback: " + d.Fallback + ")"
		}
		return head("forecast", ansiBlue, "", d.Group+"/"+d.Rule, d.Series) + s
	case *alerting.ScaleData:
		observed, previous := "observed unknown", "first decision"
		if d.CurrentKnown {
			observed = "observed " + strconv.Itoa(d.CurrentReplicas)
		}
		if d.PreviousDesiredReplicas != nil {
			previous = "previous " + strconv.Itoa(*d.PreviousDesiredReplicas)
		}
		return head("scale", ansiCyan, "", d.Group+"/"+d.Rule, d.Target) +
			fmt.Sprintf("desired %s (%s, %s), tier %d. %s", p.paint(ansiBold, strconv.Itoa(d.DesiredReplicas)), observed, previous, d.Tier, d.Reason)
	case *alerting.IncidentData:
		return p.incident(ev.Time, d)
	case nil:
		if err != nil {
			break
		}
		what := strings.TrimSuffix(strings.TrimPrefix(ev.Type, "io.inferwatch."), ".v1")
		return head(what, "", "", subject, ev.Subject) + fmt.Sprintf("(%s, %d bytes of data; --json prints it)", ev.Type, len(ev.Data))
	}
	return head("?", "", "", subject, ev.Subject) + fmt.Sprintf("(%s whose data does not decode: %v; --json prints it)", ev.Type, err)
}

// measure is the value against the band: "12.2 above 5.71…8.07
// (expected 6.89), score 4.47, for 2m".
func (p *tailPrinter) measure(v, expected, lower, upper, score float64, active time.Duration) string {
	s := fmtNumber(v)
	lo, hi := defined(lower), defined(upper)
	if lo || hi {
		rel := "within"
		switch {
		case hi && v > upper:
			rel = p.paint(ansiBold, "above")
		case lo && v < lower:
			rel = p.paint(ansiBold, "below")
		}
		band := fmtNumber(lower) + "…" + fmtNumber(upper)
		switch {
		case !lo:
			band = "…" + fmtNumber(upper)
		case !hi:
			band = fmtNumber(lower) + "…"
		}
		s += " " + rel + " " + band
	}
	if defined(expected) {
		s += " (expected " + fmtNumber(expected) + ")"
	}
	s += ", score " + fmtNumber(score)
	if active > 0 {
		s += ", for " + dur.Format(active.Round(time.Second))
	}
	return s
}

func defined(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// fmtNumber writes four significant digits, whole numbers up to 15
// digits as they are, and — for an undefined figure.
func fmtNumber(x float64) string {
	switch {
	case !defined(x):
		return "—"
	case x == math.Trunc(x) && math.Abs(x) < 1e15:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 1e4 && math.Abs(x) < 1e15:
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}
