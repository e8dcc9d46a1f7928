package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/alerting/alertmanager"
	"github.com/inferwatch/inferwatch/alerting/keda"
	"github.com/inferwatch/inferwatch/alerting/natsjs"
	"github.com/inferwatch/inferwatch/alerting/promexport"
	"github.com/inferwatch/inferwatch/alerting/writeback"
	"github.com/inferwatch/inferwatch/rules/rulefmt"
)

// TestFileDefaultsAreTheOutputs: the defaults and the names the file
// format fills in for the output sections are the outputs' own (rulefmt
// imports no output, so it holds them as its own constants).
func TestFileDefaultsAreTheOutputs(t *testing.T) {
	for _, c := range []struct {
		name       string
		file, them any
	}{
		{"nats.subject_prefix", rulefmt.DefaultSubjectPrefix, alerting.DefaultSubjectPrefix},
		{"nats.duplicate_window", rulefmt.DefaultDuplicateWindow, natsjs.DefaultDuplicateWindow},
		{"nats.embedded.listen", rulefmt.DefaultEmbeddedListen, natsjs.DefaultEmbeddedListen},
		{"alertmanager.timeout", rulefmt.DefaultAlertmanagerTimeout, alertmanager.DefaultTimeout},
		{"alertmanager.resend_delay", rulefmt.DefaultAlertmanagerResendDelay, alertmanager.DefaultResendDelay},
		{"export.metrics.max_series", rulefmt.DefaultMetricsMaxSeries, promexport.DefaultMaxSeries},
		{"export.metrics.expiry", rulefmt.DefaultMetricsExpiry, promexport.DefaultExpiry},
		{"export.keda.max_targets", rulefmt.DefaultKEDAMaxTargets, keda.DefaultMaxTargets},
		{"export.keda.forget", rulefmt.DefaultKEDAForget, keda.DefaultForget},
		{"export.keda.max_streams", rulefmt.DefaultKEDAMaxStreams, keda.DefaultMaxStreams},
		{"writeback.timeout", rulefmt.DefaultWritebackTimeout, writeback.DefaultTimeout},
		{"writeback.batch_deadline", rulefmt.DefaultWritebackBatchDeadline, writeback.DefaultBatchDeadline},
		{"writeback.max_backoff", rulefmt.DefaultWritebackMaxBackoff, writeback.DefaultBackoffMax},
		{"writeback.flush_timeout", rulefmt.DefaultWritebackFlushTimeout, writeback.DefaultFlushTimeout},
		{"writeback.queue_capacity", rulefmt.DefaultWritebackQueueCapacity, writeback.DefaultQueueCapacity},
		{"writeback.max_samples_per_send", rulefmt.DefaultWritebackMaxSamplesPerSend, writeback.DefaultMaxSamplesPerSend},
		{"writeback.protocol vm_import", rulefmt.ProtocolVMImport, string(writeback.VMImport)},
		{"writeback.protocol remote_write", rulefmt.ProtocolRemoteWrite, string(writeback.RemoteWrite)},
		{"writeback.forecast_time target", rulefmt.ForecastAtTarget, string(writeback.AtTarget)},
		{"writeback.forecast_time origin", rulefmt.ForecastAtOrigin, string(writeback.AtOrigin)},
		{"incidents.gap", rulefmt.DefaultIncidentGap, alerting.DefaultIncidentGap},
		{"incidents.max_age", rulefmt.DefaultIncidentMaxAge, alerting.DefaultIncidentMaxAge},
		{"incidents.max_open", rulefmt.DefaultIncidentMaxOpen, alerting.DefaultIncidentMaxOpen},
		{"incidents.max_members", rulefmt.DefaultIncidentMaxMembers, alerting.DefaultIncidentMaxMembers},
		{"incidents.by", rulefmt.DefaultIncidentBy, alerting.DefaultIncidentBy},
		{"incidents.list", rulefmt.DefaultIncidentList, alerting.DefaultIncidentList},
	} {
		if fmt.Sprint(c.file) != fmt.Sprint(c.them) {
			t.Errorf("%s: the file's default is %v, the output's %v", c.name, c.file, c.them)
		}
	}
}

// TestFileNamesAreTheOutputs: the stream and state bucket the file format
// derives from nats.subject_prefix, and the group names it accepts as a
// subject token, are those of the NATS output.
func TestFileNamesAreTheOutputs(t *testing.T) {
	for _, prefix := range []string{"inferwatch", "fleet-a", "Team.fleet-b", "x_y"} {
		cfg, err := loader.Parse([]byte("source: {url: 'http://127.0.0.1:8428'}\nnats: {subject_prefix: "+prefix+"}\ngroups: [{name: g, rules: [{name: r, expr: up}]}]\n"), "c.yaml")
		if err != nil {
			t.Fatalf("prefix %s: %v", prefix, err)
		}
		if want := natsjs.StreamName(prefix); cfg.NATS.Stream != want {
			t.Errorf("prefix %s: stream %q, the NATS output names it %q", prefix, cfg.NATS.Stream, want)
		}
		if want := natsjs.DefaultStateBucket(cfg.NATS.Stream); cfg.NATS.StateBucket != want {
			t.Errorf("prefix %s: state bucket %q, the NATS output names it %q", prefix, cfg.NATS.StateBucket, want)
		}
	}
	for _, name := range []string{"g", "fleet-a", "a.b", "a*", "a>", "a b", "a\tb", "ü"} {
		_, err := loader.Parse([]byte(fmt.Sprintf("source: {url: 'http://127.0.0.1:8428'}\ngroups: [{name: %q, rules: [{name: r, expr: up}]}]\n", name)), "c.yaml")
		rejected := err != nil && strings.Contains(err.Error(), "group name")
		if rejected == alerting.ValidSubjectToken(name) {
			t.Errorf("group name %q: rejected %v, a valid subject token %v (%v)", name, rejected, alerting.ValidSubjectToken(name), err)
		}
	}
	for _, c := range []struct {
		listen string
		open   bool
	}{{"127.0.0.1:4222", false}, {"localhost:4222", false}, {"[::1]:4222", false}, {"0.0.0.0:4222", true}, {"10.0.0.1:4222", true}} {
		_, err := loader.Parse([]byte("source: {url: 'http://127.0.0.1:8428'}\nnats: {embedded: {listen: '"+c.listen+"'}}\ngroups: [{name: g, rules: [{name: r, expr: up}]}]\n"), "c.yaml")
		host := c.listen[:strings.LastIndex(c.listen, ":")]
		host = strings.Trim(host, "[]")
		if refused := err != nil && strings.Contains(err.Error(), "beyond loopback"); refused != c.open || natsjs.IsLoopback(host) == c.open {
			t.Errorf("nats.embedded.listen %s: refused %v, the NATS output's loopback %v (%v)", c.listen, refused, natsjs.IsLoopback(host), err)
		}
	}
}

// TestLoaderRunsTheOutputsChecks: the daemon's loader reports what only the
// outputs check, which the file format alone accepts.
func TestLoaderRunsTheOutputsChecks(t *testing.T) {
	for _, c := range []struct {
		section, want string
	}{
		{"alertmanager: {urls: ['http://127.0.0.1:9093/api/v2/alerts']}", "ends with the API path /api/v2/alerts"},
		{"alertmanager: {urls: ['http://127.0.0.1:9093', 'http://127.0.0.1:9093/']}", "is the same as alertmanager 1"},
		{"writeback: {url: 'ftp://127.0.0.1:8428'}", `scheme "ftp" is not http or https`},
		{"writeback: {url: 'http://127.0.0.1:8428', rules: ['a/b/c']}", `"a/b/c" has more than one /`},
		{"writeback: {url: 'http://127.0.0.1:8428', rules: [other]}", `"other" selects no rule of this file`},
	} {
		data := []byte("source: {url: 'http://127.0.0.1:8428'}\n" + c.section + "\ngroups: [{name: g, rules: [{name: r, expr: up}]}]\n")
		if _, err := rulefmt.Parse(data, "c.yaml"); err != nil {
			t.Errorf("%s: the file format alone: %v", c.section, err)
		}
		if _, err := loader.Parse(data, "c.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.section, err, c.want)
		}
	}
}
