package rulefmt

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/inferwatch/inferwatch/alerting/alertmanager"
	"github.com/inferwatch/inferwatch/alerting/writeback"
)

const configDir = "../../testdata/config"

// outputs loads as the daemon does (cmd/inferwatch's loader): with the
// outputs' own checks of their sections, so that the files under
// testdata/config are judged completely.
var outputs = Loader{Outputs: OutputChecks{
	AlertmanagerURL:  alertmanager.ValidateURL,
	AlertmanagerURLs: alertmanager.ValidateURLs,
	WritebackURL:     writeback.ValidateURL,
	WritebackRules:   writeback.ValidateRules,
	WritebackSelects: writeback.MatchRule,
}}

func TestLoadGood(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(configDir, "*.good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("found %d good files in %s, want at least 3", len(files), configDir)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cfg, err := outputs.Load(file)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if cfg.File != file {
				t.Errorf("File = %q, want %q", cfg.File, file)
			}
			if len(cfg.Groups) == 0 {
				t.Fatal("no groups")
			}
			for _, g := range cfg.Groups {
				if g.Pos.File != file || g.Pos.Line == 0 || g.Pos.Column == 0 {
					t.Errorf("group %q: Pos = %v", g.Name, g.Pos)
				}
				for _, r := range g.Rules {
					// An aliased detector may lie before its rule.
					if r.Pos.Line <= g.Pos.Line || r.SpecPos.Line <= g.Pos.Line {
						t.Errorf("rule %q: Pos %v, DetectorPos %v, group at %v", r.Name, r.Pos, r.SpecPos, g.Pos)
					}
				}
			}
		})
	}
}

// badFiles lists, for each *.bad.yaml, every error it must produce (a
// fragment of each line, starting with its position). The number of lines
// must match too, so that no error goes unreported or is reported twice.
var badFiles = map[string][]string{
	"analyses.bad.yaml": {
		`analyses.bad.yaml:8:9: group "g": rule "both": a rule computes one thing: it has detector and decay; split it into two rules`,
		`analyses.bad.yaml:11:9: group "g": rule "cor_expr": a correlate rule takes its queries from correlate.x and correlate.y, not expr`,
		`analyses.bad.yaml:12:31: group "g": rule "cor_expr": correlate.y "rate(x[5m]" is not valid MetricsQL`,
		`analyses.bad.yaml:15:11: group "g": rule "cor_bad": correlate needs y (a query)`,
		`analyses.bad.yaml:16:15: group "g": rule "cor_bad": correlate.on must be a list of label names`,
		`analyses.bad.yaml:17:22: group "g": rule "cor_bad": correlate.min_abs_r must be in (0, 1], got 1.5`,
		`analyses.bad.yaml:18:11: group "g": rule "cor_bad": unknown field "bogus" in correlate`,
		`analyses.bad.yaml:21:20: group "g": rule "jitter_long": correlate.y_jitter 2h must be shorter than lookback 1h`,
		`analyses.bad.yaml:25:26: group "g": rule "decay_bad": decay.min_eta must be in [0, 1], got -1`,
		`analyses.bad.yaml:25:42: group "g": rule "decay_bad": decay.confidence must be below 1`,
		`analyses.bad.yaml:27:9: group "g": rule "knee_bad": a knee rule takes its queries from knee.concurrency and knee.qps, not expr`,
		`analyses.bad.yaml:28:15: group "g": rule "knee_bad": knee needs qps (a query)`,
		`analyses.bad.yaml:28:41: group "g": rule "knee_bad": knee.method must be kneedle or cubic, got "elbow"`,
		`analyses.bad.yaml:31:20: group "g": rule "imb_both": imbalance takes either a and b, or across`,
		`analyses.bad.yaml:31:20: group "g": rule "imb_both": imbalance.critical 0.3 must not be below imbalance.warn 0.6`,
		`analyses.bad.yaml:34:29: group "g": rule "spiky": spikiness.factor must be in [1, 100], got 0.5`,
	},
	"incidents.bad.yaml": {
		`incidents.bad.yaml:6:9: group "g": rule "r": label signal "latncy" names no signal; did you mean "latency"?`,
		`incidents.bad.yaml:10:3: incidents.max_age (1h0m0s) must be longer than incidents.gap (2h0m0s)`,
		`incidents.bad.yaml:12:13: incidents.max_open must be in [1, 1e+06], got 0`,
		`incidents.bad.yaml:13:3: unknown field "shape" in incidents`,
		`incidents.bad.yaml:15:18: incidents.change_within must be greater than 0, got -1h`,
		`incidents.bad.yaml:19:20: unknown signal "gpu_utilisation" in diagnosis "hot"; known signals: gpu_latency_jitter, gpu_memory, gpu_util,`,
		`incidents.bad.yaml:20:33: unknown condition is: "upward" in diagnosis "hot"; it must be one of up, down, anomalous, normal`,
		`incidents.bad.yaml:21:11: a condition on latency in diagnosis "hot" says nothing`,
		`incidents.bad.yaml:22:11: a condition on latency in diagnosis "hot" asks for no alert (is: normal) and for a reading`,
		`incidents.bad.yaml:23:11: a condition of diagnosis "hot" needs a signal`,
		`incidents.bad.yaml:24:11: a condition on gpu_util in diagnosis "hot" asks for a level (level_above, level_below) and of its alerts (is, above, below, detail): give them as two conditions`,
		`incidents.bad.yaml:25:11: a condition on gpu_util in diagnosis "hot" asks for a level of at least 95 and under 90: it cannot hold`,
		`incidents.bad.yaml:26:11: a condition on kv_cache in diagnosis "hot" says nothing`,
		`incidents.bad.yaml:26:30: unknown field "level_abov" in a condition of diagnosis hot; did you mean "level_above"?`,
		`incidents.bad.yaml:27:28: label_changed in diagnosis "hot" names "verison", which is not a change label; incidents.change_labels are version, image`,
		`incidents.bad.yaml:28:12: a condition with label_changed asks for a label change only`,
		`incidents.bad.yaml:29:29: forecast_missed: false in diagnosis "hot" says nothing; give true, or leave the condition out`,
		`incidents.bad.yaml:30:7: diagnosis "empty" needs at least one condition under when`,
		`incidents.bad.yaml:34:17: diagnosis "cold" is not a default one; only defaults can be disabled`,
		`incidents.bad.yaml:35:13: diagnosis "hot" is given twice (first at line 17)`,
		`incidents.bad.yaml:39:21: alertmanager.send must be a list of alerts and incidents, e.g. [incidents]; "pages" is neither`,
	},
	"min-dev.bad.yaml": {
		`min-dev.bad.yaml:9:19: group "g": rule "a": min_dev must be a finite number ≥ 0, got -1`,
		`min-dev.bad.yaml:12:19: group "g": rule "b": min_dev must be a number`,
	},
	"syntax.bad.yaml": {`syntax.bad.yaml:7:8: YAML syntax error: the key "expr" at column 8 lines up with no key above it; indent it to column 9 like "name" at line 6, or to column 5 like "rules" at line 5`},
	"unknown-top.bad.yaml": {
		"unknown-top.bad.yaml:1:1: groups is required",
		`unknown-top.bad.yaml:3:1: unknown field "group" in the top level; did you mean "groups"?`,
	},
	"unknown-source.bad.yaml": {
		`unknown-source.bad.yaml:3:3: unknown field "basic_auht" in source; did you mean "basic_auth"?`,
		`unknown-source.bad.yaml:7:5: unknown field "ca_fiel" in source.tls_config; did you mean "ca_file"?`,
	},
	"unknown-field.bad.yaml": {
		`unknown-field.bad.yaml:6:5: group "g": rule "r": a rule needs an expr`,
		`unknown-field.bad.yaml:7:5: group "g": rule "r": unknown field "exprr" in rule; did you mean "expr"?`,
	},
	"bad-duration.bad.yaml": {
		`bad-duration.bad.yaml:3:12: source.timeout: "30 seconds" is not a duration`,
		`bad-duration.bad.yaml:4:21: source.evaluation_delay: "30" has no unit; write e.g. 30s`,
		`bad-duration.bad.yaml:10:19: group "g": rule "r": lookback: cannot use duration "5i": the step-relative unit i`,
	},
	"zero-interval.bad.yaml": {`zero-interval.bad.yaml:5:15: group "g": interval must be greater than 0, got 0s`},
	"negative-lookback.bad.yaml": {
		`negative-lookback.bad.yaml:8:19: group "g": rule "r": lookback must be greater than 0, got -5m`,
		`negative-lookback.bad.yaml:9:14: group "g": rule "r": for must be 0 or greater, got -1m`,
	},
	"step-over-lookback.bad.yaml": {
		`step-over-lookback.bad.yaml:9:15: group "explicit": rule "r": step 15m must not exceed lookback 10m`,
		`step-over-lookback.bad.yaml:13:9: group "defaulted": rule "r": step (the group interval) 2h must not exceed lookback 1h`,
	},
	"too-many-points.bad.yaml": {`too-many-points.bad.yaml:10:15: group "g": rule "r": lookback 7d / step 30s gives more than 11000 points`},
	"missing-url.bad.yaml":     {"missing-url.bad.yaml:2:3: source.url is required"},
	"non-http-url.bad.yaml":    {`non-http-url.bad.yaml:2:8: source.url "ftp://127.0.0.1:8428" must be an absolute http:// or https:// URL`},
	"duplicate-group.bad.yaml": {`duplicate-group.bad.yaml:7:11: group "g": duplicate group name "g"; the first is at line 4`},
	"duplicate-rule.bad.yaml":  {`duplicate-rule.bad.yaml:7:16: group "g": rule "r": duplicate rule name "r" in this group; the first is at line 6`},
	"bad-expr.bad.yaml":        {`bad-expr.bad.yaml:7:15: group "g": rule "r": expr "rate(foo[5m]" is not valid MetricsQL: `},
	"bad-label.bad.yaml": {
		`bad-label.bad.yaml:9:11: group "g": rule "r": label name "team-name" must match`,
		`bad-label.bad.yaml:10:11: group "g": rule "r": label name "__name__" must not start with __`,
	},
	"detector-list.bad.yaml": {
		`detector-list.bad.yaml:8:19: group "g": rule "r": detector must be a name (detector: sigma) or a mapping`,
		`detector-list.bad.yaml:13:14: group "g": rule "s": detector parameter "k" must be a single value`,
	},
	"bad-subject.bad.yaml": {`bad-subject.bad.yaml:4:19: nats.subject_prefix "infer watch.>" must not contain spaces`},
	"bad-nats.bad.yaml": {
		`bad-nats.bad.yaml:4:8: nats.url "http://b:4222" must start with nats://`,
		`bad-nats.bad.yaml:5:19: nats.subject_prefix "a..b" has an empty token`,
		`bad-nats.bad.yaml:6:11: nats.stream "MY.STREAM" must not contain "."`,
		`bad-nats.bad.yaml:7:21: nats.duplicate_window must be greater than 0, got 0s`,
		`bad-nats.bad.yaml:9:13: nats.embedded.listen "localhost" is not host:port`,
	},
	"shards.bad.yaml": {
		`shards.bad.yaml:5:13: group "zero": shards must be in [1, 256], got 0`,
		`shards.bad.yaml:10:5: group "no_label": shards needs shard_by`,
		`shards.bad.yaml:14:5: group "no_count": shard_by names the label a group's shards split its series by, and the group has no shards`,
		`shards.bad.yaml:19:15: group "two_labels": shard_by takes one label, got 2`,
		`shards.bad.yaml:25:5: group "summed": unknown field "shard_size" in group`,
		`shards.bad.yaml:27:9: group "summed": rule "by_model": the group's shards split this rule's series by pod, and its expr aggregates with sum by (model), without pod`,
		`shards.bad.yaml:28:9: group "summed": rule "all": the group's shards split this rule's series by pod, and its expr aggregates all series with max`,
		`shards.bad.yaml:29:9: group "summed": rule "joined": the group's shards split this rule's series by pod, and its expr matches with on (model), without pod`,
		`shards.bad.yaml:31:9: group "summed": rule "ignored": the group's shards split this rule's series by pod, and its expr matches with ignoring (pod)`,
		`shards.bad.yaml:32:9: group "summed": rule "relabeled": the group's shards split this rule's series by pod, and its expr rewrites pod with label_replace`,
	},
	"bad-lease.bad.yaml":     {`bad-lease.bad.yaml:5:14: nats.lease_ttl must be at least 1s, got 500ms`},
	"bad-heartbeat.bad.yaml": {`bad-heartbeat.bad.yaml:6:14: nats.heartbeat 4s is more than a third of nats.lease_ttl 9s`},
	"auth-conflict.bad.yaml": {"auth-conflict.bad.yaml:2:3: source: at most one of basic_auth, oauth2 & authorization must be configured"},
	"writeback.bad.yaml": {
		`writeback.bad.yaml:4:3: writeback: scores and forecasts are both false, so nothing would be written`,
		`writeback.bad.yaml:4:8: writeback.url: writeback URL http://u:xxxxx@127.0.0.1:8428 holds credentials`,
		`writeback.bad.yaml:5:13: writeback.protocol "influx" is not vm_import or remote_write`,
		`writeback.bad.yaml:6:25: writeback rules: "a/b/c" has more than one /`,
		`writeback.bad.yaml:6:32: writeback.rules: "nosuch" selects no rule of this file`,
		`writeback.bad.yaml:9:18: writeback.forecast_time "now" is not target or origin`,
		`writeback.bad.yaml:10:14: writeback.horizons must be greater than 0, got 0s`,
		`writeback.bad.yaml:10:18: writeback.horizons: "10" has no unit`,
		`writeback.bad.yaml:11:19: writeback.queue_capacity must be in [1, 1e+09], got 0`,
		`writeback.bad.yaml:12:19: writeback.batch_deadline must be greater than 0, got -1s`,
		`writeback.bad.yaml:13:3: unknown field "bogus" in writeback`,
	},
	"no-groups.bad.yaml":     {"no-groups.bad.yaml:3:9: groups must hold at least one group"},
	"two-documents.bad.yaml": {"two-documents.bad.yaml:7:1: only one YAML document is allowed"},
	"many-errors.bad.yaml": {
		`many-errors.bad.yaml:6:15: group "first": interval must be greater than 0, got 0s`,
		`many-errors.bad.yaml:12:15: group "second": rule "r": expr "sum(" is not valid MetricsQL`,
		`many-errors.bad.yaml:15:15: group "third": rule "1bad": rule name "1bad" must match`,
		`many-errors.bad.yaml:19:19: group "third": rule "ok": lookback: "banana" is not a duration`,
	},
}

// A lease TTL set alone brings the heartbeat down to a third of it.
func TestLeaseSettings(t *testing.T) {
	cfg, err := outputs.Load(filepath.Join(configDir, "replicas.good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := cfg.NATS; n.LeaseTTL != 6*time.Second || n.Heartbeat != 2*time.Second || n.StreamReplicas != 3 {
		t.Errorf("lease_ttl %s, heartbeat %s, stream_replicas %d; want 6s, 2s, 3", n.LeaseTTL, n.Heartbeat, n.StreamReplicas)
	}
}

func TestLoadBad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(configDir, "*.bad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if _, ok := badFiles[filepath.Base(file)]; !ok {
			t.Errorf("%s has no expected errors in badFiles", file)
		}
	}
	for name, want := range badFiles {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(configDir, name)
			cfg, err := outputs.Load(file)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("Load returned a config with its error")
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is %T, not Errors: %v", err, err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(want) {
				t.Errorf("got %d errors, want %d:\n%v", len(lines), len(want), err)
			}
			for i, w := range want {
				w = configDir + "/" + w
				if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
					t.Errorf("error %d: want prefix\n\t%s\ngot all:\n%v", i, w, err)
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := outputs.Parse([]byte(`
source: {url: "http://127.0.0.1:8428"}
groups:
  - name: g
    rules:
      - {name: r, expr: up}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source.Timeout != 30*time.Second || cfg.Source.EvaluationDelay != 30*time.Second || cfg.Source.UsePOST {
		t.Errorf("source defaults: %+v", cfg.Source)
	}
	if hc := cfg.Source.HTTPClientConfig; !hc.FollowRedirects || !hc.EnableHTTP2 || hc.BasicAuth != nil || hc.Authorization != nil {
		t.Errorf("HTTP client defaults: %+v", hc)
	}
	wantNATS := NATS{SubjectPrefix: "inferwatch", Stream: "INFERWATCH", StateBucket: "INFERWATCH_STATE", DuplicateWindow: 24 * time.Hour,
		Embedded: Embedded{Listen: "127.0.0.1:14222"}, LeaseTTL: 15 * time.Second, Heartbeat: 5 * time.Second}
	if cfg.NATS != wantNATS {
		t.Errorf("NATS = %+v, want %+v", cfg.NATS, wantNATS)
	}
	g := cfg.Groups[0]
	if g.Interval != time.Minute || g.Pos != (Pos{Line: 4, Column: 5}) {
		t.Errorf("group: interval %v pos %v", g.Interval, g.Pos)
	}
	r := g.Rules[0]
	want := Rule{Name: "r", Expr: "up", Lookback: 0, Step: time.Minute, For: 0,
		Kind: KindAnomaly, Spec: &Detector{Name: "auto"}, Pos: Pos{Line: 6, Column: 9}, SpecPos: Pos{Line: 6, Column: 9}}
	if r.Name != want.Name || r.Expr != want.Expr || r.Lookback != want.Lookback || r.Step != want.Step ||
		r.For != want.For || r.Kind != want.Kind || specOf[*Detector](r).Name != specOf[*Detector](want).Name || len(specOf[*Detector](r).Params) != 0 ||
		len(r.Labels) != 0 || r.Pos != want.Pos || r.SpecPos != want.SpecPos {
		t.Errorf("rule = %+v\nwant %+v", r, want)
	}
}

func TestStepDefaultsToGroupInterval(t *testing.T) {
	cfg, err := outputs.Parse([]byte(`
source: {url: "https://vmselect:8481/select/0/prometheus"}
groups:
  - name: g
    interval: 5m
    rules:
      - {name: a, expr: up}
      - {name: b, expr: up, step: 1m, lookback: 1d}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Groups[0].Rules
	if rs[0].Step != 5*time.Minute || rs[1].Step != time.Minute || rs[1].Lookback != 24*time.Hour {
		t.Errorf("steps %v %v, lookback %v", rs[0].Step, rs[1].Step, rs[1].Lookback)
	}
}

func TestFullValues(t *testing.T) {
	file := filepath.Join(configDir, "full.good.yaml")
	cfg, err := outputs.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Source
	if s.URL != "https://vmselect.example:8481/select/0/prometheus" || s.Timeout != 45*time.Second ||
		s.EvaluationDelay != time.Minute || !s.UsePOST {
		t.Errorf("source = %+v", s)
	}
	hc := s.HTTPClientConfig
	if hc.BasicAuth == nil || hc.BasicAuth.Username != "inferwatch" ||
		hc.BasicAuth.PasswordFile != filepath.Join(configDir, "secrets/vm-password") {
		t.Errorf("basic_auth = %+v (password_file must be relative to the config file)", hc.BasicAuth)
	}
	if hc.TLSConfig.ServerName != "vmselect.example" || hc.FollowRedirects || hc.ProxyURL.String() != "http://proxy.example:3128" {
		t.Errorf("http client config = %+v", hc)
	}
	if hc.HTTPHeaders == nil || !slices.Equal(hc.HTTPHeaders.Headers["X-Scope-OrgID"].Values, []string{"team-llm"}) {
		t.Errorf("http_headers = %+v", hc.HTTPHeaders)
	}
	n := cfg.NATS
	if n.URL != "nats://nats-a.example:4222, tls://nats-b.example:4222" || n.SubjectPrefix != "inferwatch.prod-eu" ||
		n.Stream != "INFERWATCH_PROD" || n.DuplicateWindow != 2*time.Hour ||
		n.Embedded != (Embedded{Listen: "127.0.0.1:0", StoreDir: "/var/lib/inferwatch/jetstream"}) {
		t.Errorf("nats = %+v", n)
	}
	if len(cfg.Groups) != 2 {
		t.Fatalf("%d groups", len(cfg.Groups))
	}
	r := cfg.Groups[0].Rules[0]
	if r.Lookback != 6*time.Hour || r.Step != time.Minute || r.For != 5*time.Minute ||
		r.Labels["team"] != "llm-serving" || r.Labels["severity"] != "page" || len(r.Labels) != 2 || r.MinDev != 0.05 {
		t.Errorf("rule = %+v", r)
	}
	if specOf[*Detector](r).Name != "sigma" || len(specOf[*Detector](r).Params) != 2 || specOf[*Detector](r).Params["k"] != "3" ||
		specOf[*Detector](r).Params["min_points"] != "20" || r.SpecPos != (Pos{File: file, Line: 48, Column: 11}) {
		t.Errorf("detector = %+v at %v", specOf[*Detector](r), r.SpecPos)
	}
	if d := specOf[*Detector](cfg.Groups[0].Rules[1]); d.Name != "robust" || d.Params != nil {
		t.Errorf("scalar detector = %+v", d)
	}
	g := cfg.Groups[1]
	if g.Interval != 90*time.Minute || g.Rules[0].Lookback != 7*24*time.Hour || specOf[*Detector](g.Rules[0]).Params["period"] != "1d" {
		t.Errorf("group gpu = %+v", g)
	}
}

func TestDerivedStream(t *testing.T) {
	for prefix, want := range map[string]string{
		"inferwatch":          "INFERWATCH",
		"acme.llm-serving.eu": "ACME_LLM_SERVING_EU",
	} {
		cfg, err := outputs.Parse([]byte("source: {url: 'http://h:1'}\nnats: {subject_prefix: "+prefix+"}\ngroups: [{name: g, rules: [{name: r, expr: up}]}]\n"), "")
		if err != nil {
			t.Fatalf("%s: %v", prefix, err)
		}
		if cfg.NATS.Stream != want {
			t.Errorf("prefix %q: stream %q, want %q", prefix, cfg.NATS.Stream, want)
		}
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	cfg, err := outputs.Load(filepath.Join(configDir, "anchors.good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Groups[0].Rules
	if rs[1].Name != "running" || rs[1].Expr != "sum(vllm:num_requests_running)" || rs[1].Lookback != 2*time.Hour ||
		specOf[*Detector](rs[1]).Params["k"] != "4" {
		t.Errorf("merged rule = %+v", rs[1])
	}
}

// TestParseErrors covers problems that need no file of their own; each
// case lists the fragments its error must hold, in order.
func TestParseErrors(t *testing.T) {
	const tail = "groups: [{name: g, rules: [{name: r, expr: up}]}]\n"
	f := func(name, yml string, want ...string) {
		t.Helper()
		_, err := outputs.Parse([]byte(yml), "c.yaml")
		if err == nil {
			t.Errorf("%s: no error", name)
			return
		}
		got := err.Error()
		rest := got
		for _, w := range want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: error lacks %q (in order):\n%s", name, w, got)
				return
			}
			rest = rest[i+len(w):]
		}
	}
	f("empty", "", "c.yaml:1:1: the configuration is empty")
	f("comment only", "# nothing\n", "c.yaml:1:1: the configuration is empty")
	f("top level list", "- a\n", "c.yaml:1:1: the top level must be a mapping")
	f("no source", tail, "c.yaml:1:1: source is required")
	f("source scalar", "source: http://h\n"+tail, `c.yaml:1:9: source must be a mapping`)
	f("url empty", "source: {url: ''}\n"+tail, "c.yaml:1:15: source.url must not be empty")
	f("url relative", "source: {url: /api}\n"+tail, "must be an absolute http:// or https:// URL")
	f("url no host", "source: {url: 'http:///x'}\n"+tail, "has no host")
	f("url credentials", "source: {url: 'http://u:p@h:1'}\n"+tail, "must not hold credentials")
	f("url query", "source: {url: 'http://h:1/?x=1'}\n"+tail, "must not have a query")
	f("timeout zero", "source: {url: 'http://h', timeout: 0s}\n"+tail, "source.timeout must be greater than 0, got 0s")
	f("delay negative", "source: {url: 'http://h', evaluation_delay: -1s}\n"+tail, "source.evaluation_delay must be 0 or greater, got -1s")
	f("use_post", "source: {url: 'http://h', use_post: maybe}\n"+tail, `source.use_post must be true or false, got "maybe"`)
	f("http type", "source: {url: 'http://h', follow_redirects: maybe}\n"+tail, "c.yaml:1:45: source.follow_redirects: cannot unmarshal")
	f("tls validate", "source: {url: 'http://h', tls_config: {ca: x, ca_file: y}}\n"+tail, "c.yaml:1:39: source.tls_config: at most one of ca")
	f("header unknown", "source: {url: 'http://h', http_headers: {X-A: {value: [a]}}}\n"+tail,
		`c.yaml:1:48: unknown field "value" in source.http_headers.X-A; did you mean "values"?`)
	f("bearer and basic", "source: {url: 'http://h', bearer_token: t, basic_auth: {username: u}}\n"+tail, "c.yaml:1:9: source: at most one of")
	f("duplicate key", "source: {url: 'http://h', url: 'http://i'}\n"+tail, `c.yaml:1:27: source: "url" is given twice (first at line 1)`)
	f("nats list", "source: {url: 'http://h'}\nnats: [a]\n"+tail, "c.yaml:2:7: nats must be a mapping")
	f("nats unknown", "source: {url: 'http://h'}\nnats: {subject: x}\n"+tail, `unknown field "subject" in nats`)
	f("nats empty entry", "source: {url: 'http://h'}\nnats: {url: 'nats://a:1,'}\n"+tail, "has an empty entry")
	f("subject wildcard", "source: {url: 'http://h'}\nnats: {subject_prefix: 'a.*'}\n"+tail, "must not contain the wildcards")
	f("derived stream", "source: {url: 'http://h'}\nnats: {subject_prefix: 'a/b'}\n"+tail, `the stream name "A/B" made from nats.subject_prefix`)
	f("listen port", "source: {url: 'http://h'}\nnats: {embedded: {listen: 'h:99999'}}\n"+tail, "no port number from 0 to 65535")
	f("embedded unknown", "source: {url: 'http://h'}\nnats: {embedded: {dir: x}}\n"+tail, `unknown field "dir" in nats.embedded`)
	const src = "source: {url: 'http://h'}\n"
	f("groups mapping", src+"groups: {g: 1}\n", "c.yaml:2:9: groups must be a list")
	f("group scalar", src+"groups: [g]\n", "c.yaml:2:10: a group must be a mapping")
	f("group no name", src+"groups: [{rules: [{name: r, expr: up}]}]\n", "c.yaml:2:10: a group needs a name")
	f("group no rules", src+"groups: [{name: g}]\n", `c.yaml:2:10: group "g": a group needs rules`)
	f("group empty rules", src+"groups: [{name: g, rules: []}]\n", `group "g": rules must hold at least one rule`)
	f("interval bare number", src+"groups: [{name: g, interval: 60, rules: [{name: r, expr: up}]}]\n", `group "g": interval: "60" has no unit`)
	f("interval null", src+"groups: [{name: g, interval: , rules: [{name: r, expr: up}]}]\n", `interval must be a duration`)
	f("rule no name", src+"groups: [{name: g, rules: [{expr: up}]}]\n", `group "g": a rule needs a name`)
	f("rule name list", src+"groups: [{name: g, rules: [{name: [a], expr: up}]}]\n", "c.yaml:2:28: group \"g\": a rule needs a name", "c.yaml:2:35: group \"g\": name must be a string, got a list")
	f("expr blank", src+"groups: [{name: g, rules: [{name: r, expr: ' '}]}]\n", `rule "r": expr must not be empty`)
	f("step zero", src+"groups: [{name: g, rules: [{name: r, expr: up, step: 0s}]}]\n", "step must be greater than 0, got 0s")
	f("11000 points and one", src+"groups: [{name: g, rules: [{name: r, expr: up, spikiness: {}, lookback: 11001s, step: 1s}]}]\n", "more than 11000 points")
	f("labels list", src+"groups: [{name: g, rules: [{name: r, expr: up, labels: [a]}]}]\n", "labels must be a mapping")
	f("label null", src+"groups: [{name: g, rules: [{name: r, expr: up, labels: {a: }}]}]\n", `label "a" must have a value`)
	f("detector param null", src+"groups: [{name: g, rules: [{name: r, expr: up, detector: {k: }}]}]\n", `detector parameter "k" must be a single value`)
	f("detector param map", src+"groups: [{name: g, rules: [{name: r, expr: up, detector: {k: {a: 1}}}]}]\n", `got a mapping`)
	f("merge of scalar", src+"groups: [{name: g, <<: 3, rules: [{name: r, expr: up}]}]\n", "a merge key (<<) needs a mapping")
	f("errors keep going", src+"groups: [{name: a, interval: 0s, rules: [{name: r, expr: up}]}, {name: b, interval: x, rules: [{name: r, expr: 'up{'}]}]\n",
		`c.yaml:2:30: group "a": interval must be greater than 0`, `group "b": interval: "x" is not a duration`, `group "b": rule "r": expr "up{"`)
}

func TestParseDetectorForms(t *testing.T) {
	cfg, err := outputs.Parse([]byte(`source: {url: 'http://h'}
groups:
  - name: g
    rules:
      - {name: a, expr: up}
      - {name: b, expr: up, detector: mad}
      - name: c
        expr: up
        detector:
          k: 2.5
      - name: d
        expr: up
        detector: {name: ewma, alpha: "0.3", warmup: 10}
`), "d.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Groups[0].Rules
	tests := []struct {
		rule   Rule
		name   string
		params map[string]string
		pos    Pos
	}{
		{rs[0], "auto", nil, Pos{"d.yaml", 5, 9}},
		{rs[1], "mad", nil, Pos{"d.yaml", 6, 39}},
		{rs[2], "auto", map[string]string{"k": "2.5"}, Pos{"d.yaml", 10, 11}},
		{rs[3], "ewma", map[string]string{"alpha": "0.3", "warmup": "10"}, Pos{"d.yaml", 13, 19}},
	}
	for _, tt := range tests {
		d := specOf[*Detector](tt.rule)
		if d.Name != tt.name || len(d.Params) != len(tt.params) || tt.rule.SpecPos != tt.pos {
			t.Errorf("rule %s: detector %+v at %v, want %s %v at %v", tt.rule.Name, d, tt.rule.SpecPos, tt.name, tt.params, tt.pos)
		}
		for k, v := range tt.params {
			if d.Params[k] != v {
				t.Errorf("rule %s: param %s = %q, want %q", tt.rule.Name, k, d.Params[k], v)
			}
		}
	}
}

func TestAliasExpansionIsBounded(t *testing.T) {
	// Each level merges the one before ten times: 10^7 entries if expanded.
	var b strings.Builder
	b.WriteString("x0: &a0 {k: v}\n")
	for i := 1; i <= 7; i++ {
		b.WriteString("x" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("source: {url: 'http://h', http_headers: {X: {values: *a7}}}\n")
	b.WriteString("groups: [{name: g, rules: [{name: r, expr: up}]}]\n")
	_, err := outputs.Parse([]byte(b.String()), "bomb.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	if !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("unexpected error: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := outputs.Load(path)
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(err.Error(), path+": cannot read the configuration") {
		t.Errorf("err = %v", err)
	}
}

func TestErrors(t *testing.T) {
	var es Errors
	if es.Err() != nil {
		t.Fatal("empty Errors.Err() != nil")
	}
	es.Add(Pos{"b.yaml", 1, 1}, "", "", "in b")
	es.Add(Pos{"a.yaml", 9, 2}, "g", "r", "rule %s", "late")
	es.Add(Pos{"a.yaml", 3, 7}, "g", "", "group %d", 1)
	es.Add(Pos{"a.yaml", 3, 7}, "", "", "same position, added later")
	es.Add(Pos{File: "a.yaml"}, "", "", "no position")
	es.Add(Pos{}, "", "r", "nothing known")
	err := es.Err()
	want := strings.Join([]string{
		`rule "r": nothing known`,
		`a.yaml: no position`,
		`a.yaml:3:7: group "g": group 1`,
		`a.yaml:3:7: same position, added later`,
		`a.yaml:9:2: group "g": rule "r": rule late`,
		`b.yaml:1:1: in b`,
	}, "\n")
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
	if es[0].Msg != "in b" {
		t.Error("Err sorted the receiver in place")
	}
	var e *Error
	if !errors.As(err, &e) || e.Msg != "nothing known" {
		t.Errorf("errors.As(*Error) = %v", e)
	}
	if got := (Pos{"f", 4, 0}).String(); got != "f:4" {
		t.Errorf("Pos without column = %q", got)
	}
}

func TestDefaultHTTPClientConfigUntouched(t *testing.T) {
	if _, err := outputs.Parse([]byte("source: {url: 'http://h', follow_redirects: false, bearer_token: t}\ngroups: [{name: g, rules: [{name: r, expr: up}]}]\n"), ""); err != nil {
		t.Fatal(err)
	}
	if !config.DefaultHTTPClientConfig.FollowRedirects || config.DefaultHTTPClientConfig.Authorization != nil {
		t.Errorf("Parse changed config.DefaultHTTPClientConfig: %+v", config.DefaultHTTPClientConfig)
	}
}

func BenchmarkParseFull(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(configDir, "full.good.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := outputs.Parse(data, "full.good.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAnalysisRulesAndTheirDefaults(t *testing.T) {
	cfg, err := outputs.Load("../../testdata/config/analyses.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Groups[0].Rules
	c := specOf[*Correlate](rs[0])
	if rs[0].Kind != "correlation" || c == nil || c.X == "" || c.Y == "" || c.YJitter != 15*time.Minute ||
		len(c.On) != 1 || c.On[0] != "pod" || c.MaxLag != 5*time.Minute || c.MinAbsR != 0.6 ||
		c.MaxP != 0.001 || c.MinPoints != 40 || c.XAbove != 95 || rs[0].Expr != "" {
		t.Errorf("correlate = %+v (kind %s)", c, rs[0].Kind)
	}
	d := specOf[*Decay](rs[1])
	if rs[1].Kind != "decay" || d == nil || d.Peak != 2400 || d.MinEta != 0.2 || d.MinSlope != 0.05 ||
		d.Confidence != 0.9 || d.PeakQuantile != 0.95 {
		t.Errorf("decay = %+v", d)
	}
	if k := specOf[*Knee](rs[3]); rs[3].Kind != "knee" || k == nil || k.Method != "cubic" || k.Margin != 0.9 || k.Recent != 10*time.Minute || len(k.On) != 1 || k.QPS == "" || rs[3].Expr != "" {
		t.Errorf("knee = %+v", k)
	}
	if sp := specOf[*Spikiness](rs[4]); rs[4].Kind != "spikiness" || sp == nil || sp.Recent != 10*time.Minute || sp.Factor != 1.5 {
		t.Errorf("spikiness = %+v", sp)
	}
	if m := specOf[*Imbalance](rs[5]); rs[5].Kind != "imbalance" || m == nil || m.Across != "pod" || m.Warn != 0.3 || m.Critical != 0.6 || rs[5].Expr == "" {
		t.Errorf("imbalance across = %+v", m)
	}
	if m := specOf[*Imbalance](rs[6]); m == nil || m.A == "" || m.B == "" || len(m.On) != 1 || m.Warn != DefaultImbalanceWarn || m.Critical != DefaultImbalanceCritical {
		t.Errorf("imbalance a/b = %+v", m)
	}
	want := Decay{PeakQuantile: DefaultDecayPeakQuantile, MinSlope: DefaultDecayMinSlope,
		MinEta: DefaultDecayMinEta, Confidence: DefaultDecayConfidence, Current: time.Hour}
	if d := specOf[*Decay](rs[2]); d == nil || *d != want {
		t.Errorf("decay defaults = %+v, want %+v", d, want)
	}
}

func TestWritebackSection(t *testing.T) {
	cfg, err := outputs.Load(filepath.Join(configDir, "writeback.good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Writeback
	if w == nil {
		t.Fatal("no writeback section")
	}
	if w.URL != "http://127.0.0.1:9090/api/v1/write" || w.Protocol != "remote_write" || !w.Scores || !w.Forecasts ||
		w.ForecastTime != "" || !slices.Equal(w.Rules, []string{"latency/*", "request_rate"}) ||
		!slices.Equal(w.Horizons, []time.Duration{10 * time.Minute, time.Hour}) ||
		w.Timeout != 10*time.Second || w.QueueCapacity != 50000 || w.MaxSamplesPerSend != 1000 ||
		w.BatchDeadline != 2*time.Second || w.MaxBackoff != 5*time.Second || w.FlushTimeout != 20*time.Second {
		t.Errorf("writeback = %+v", *w)
	}
	if w.HTTPClientConfig.BasicAuth == nil || w.HTTPClientConfig.BasicAuth.PasswordFile != filepath.Join(configDir, "wb-password") {
		t.Errorf("basic_auth %+v: the password file is not relative to the configuration", w.HTTPClientConfig.BasicAuth)
	}
	cfg, err = outputs.Load(filepath.Join(configDir, "minimal.good.yaml"))
	if err != nil || cfg.Writeback != nil {
		t.Errorf("without the section: %v, %+v", err, cfg.Writeback)
	}
}

// TestIncidentsSection: the defaults without the section, and the file's
// diagnoses over the default table.
func TestIncidentsSection(t *testing.T) {
	cfg, err := outputs.Load(filepath.Join(configDir, "analyses.good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := cfg.Incidents
	if in.Gap != DefaultIncidentGap || in.MaxAge != DefaultIncidentMaxAge || in.Diagnoses != nil || in.ChangeWithin != DefaultChangeWithin ||
		strings.Join(in.ChangeLabels, ",") != "version,image,model_version,revision" ||
		strings.Join(in.By, ",") != "model,model_name" {
		t.Errorf("defaults: %+v", in)
	}
	cfg, err = outputs.Load(filepath.Join(configDir, "incidents.good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in = cfg.Incidents
	var names []string
	for _, d := range in.Diagnoses {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, ","); got != "traffic_surge,regression,gpu_saturation,host_bottleneck,engine_stall,memory_leak" {
		t.Errorf("diagnoses %s", got)
	}
	gpu := in.Diagnoses[2]
	if gpu.Title != "GPU saturation" || len(gpu.When) != 1 || *gpu.When[0].Above != 95 || gpu.Pos.Line != 23 {
		t.Errorf("the replaced default: %+v", gpu)
	}
	leak := in.Diagnoses[5]
	if len(leak.When) != 1 || len(leak.When[0].Any) != 2 || leak.When[0].Any[1].Signal != "kv_cache" ||
		len(leak.Also) != 3 || !leak.Also[2].ForecastMissed || leak.Also[0].LevelBelow == nil || *leak.Also[0].LevelBelow != 90 || leak.Also[0].LevelAbove != nil ||
		!leak.Also[1].LabelChanged || strings.Join(leak.Also[1].Labels, ",") != "app_version" {
		t.Errorf("the added rule: %+v", leak)
	}
	if am := cfg.Alertmanager; am == nil || am.SendAlerts || !am.SendIncidents {
		t.Errorf("alertmanager.send [incidents]: %+v", am)
	}
	if in.Gap != 15*time.Minute || in.MaxAge != 48*time.Hour || in.MaxOpen != 50 || in.MaxMembers != 20 || strings.Join(in.List, ",") != "pod" ||
		strings.Join(in.ChangeLabels, ",") != "app_version" || in.ChangeWithin != 30*time.Minute {
		t.Errorf("settings: %+v", in)
	}
	// Every preset rule has a signal, and every signal is known.
	signals := PresetSignals()
	for _, r := range cfg.Groups[0].Rules {
		if s := signals[r.Name]; s == "" && r.Labels["signal"] == "" {
			t.Errorf("preset rule %s has no signal", r.Name)
		} else if s != "" && Signals[s] == "" {
			t.Errorf("preset rule %s: unknown signal %s", r.Name, s)
		}
	}
}
