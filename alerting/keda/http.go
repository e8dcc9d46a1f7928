package keda

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/internal/metricname"
)

// PathPrefix is the path Handler serves under.
const PathPrefix = "/keda/v1/"

// Signal is the JSON of one target's scale signal, as Handler serves it.
// The valueLocation of a KEDA metrics-api trigger (format json, a GJSON
// path) reading a target's URL is the field's name: desired_replicas,
// predicted_load, predicted_upper, current_replicas, tier.
type Signal struct {
	Rule  string `json:"rule"`
	Group string `json:"group"`
	// Target is the target's identity, its labels in selector syntax;
	// Labels are its labels plus the rule's.
	Target string            `json:"target"`
	Labels map[string]string `json:"labels"`
	// DesiredReplicas is what the rule decided: with targetValue "1", KEDA
	// scales to it.
	DesiredReplicas int `json:"desired_replicas"`
	// CurrentReplicas is what the rule saw running; null when unknown.
	CurrentReplicas *int `json:"current_replicas"`
	// PredictedLoad and PredictedUpper are the forecast peak over the
	// horizon and its upper bound (null without a forecast); with
	// targetValue set to what one replica sustains, KEDA computes the
	// replicas from the forecast alone.
	PredictedLoad      alerting.JSONFloat `json:"predicted_load"`
	PredictedUpper     alerting.JSONFloat `json:"predicted_upper"`
	CapacityPerReplica alerting.JSONFloat `json:"capacity_per_replica"`
	// Tier says what decided: 1 saturated now, 2 latency near the SLO,
	// 3 the forecast, 0 nothing known to act on.
	Tier   int    `json:"tier"`
	Reason string `json:"reason"`
	// Time is when the signal was computed; ValidUntil is Time plus the
	// forecast horizon. Stale is true past ValidUntil and the grace.
	Time       time.Time `json:"time"`
	ValidUntil time.Time `json:"valid_until"`
	Stale      bool      `json:"stale"`
}

func signalOf(sig alerting.ScaleData, stale bool) Signal {
	out := Signal{Rule: sig.Rule, Group: sig.Group, Target: sig.Target, Labels: sig.Labels,
		DesiredReplicas: sig.DesiredReplicas, PredictedLoad: sig.PredictedLoad, PredictedUpper: sig.PredictedUpper,
		CapacityPerReplica: sig.CapacityPerReplica, Tier: sig.Tier, Reason: sig.Reason, Time: sig.Time,
		ValidUntil: sig.ValidUntil, Stale: stale}
	if sig.CurrentKnown {
		c := sig.CurrentReplicas
		out.CurrentReplicas = &c
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	return out
}

// List is the JSON of a list of signals.
type List struct {
	Targets []Signal `json:"targets"`
}

// Error is the JSON of a failed request. A 404 names the known rules, or
// the known targets of the rule asked for (at most 50 of them, with the
// total). A 503 for a stale signal carries the signal.
type Error struct {
	Error        string   `json:"error"`
	KnownRules   []string `json:"known_rules,omitempty"`
	KnownTargets []string `json:"known_targets,omitempty"`
	KnownTotal   int      `json:"known_total,omitempty"`
	Signal       *Signal  `json:"signal,omitempty"`
}

// Handler serves the signals as JSON under PathPrefix, for KEDA's
// metrics-api trigger and for people:
//
//	GET /keda/v1/targets                  every target of every rule
//	GET /keda/v1/targets/{rule}           the targets of one rule
//	GET /keda/v1/targets/{rule}/{target}  one target: a Signal
//
// {target} is the target in selector syntax, URL-escaped
// (%7Bmodel=%22qwen%22%7D), or its labels as name=value pairs separated by
// commas (model=qwen,pod=p1), values URL-escaped where they hold ',', '/'
// or '%'. A stale signal answers 503 (its JSON in the error's signal
// field) unless the query says allow_stale=true; the lists always answer
// 200, each signal with its stale flag. An unknown rule or target answers
// 404 naming the known ones.
func (s *Signals) Handler() http.Handler {
	return http.HandlerFunc(s.serveHTTP)
}

func (s *Signals) serveHTTP(w http.ResponseWriter, r *http.Request) {
	code := s.answer(w, r)
	s.set.GetOrCreateCounter(metricname.Name("inferwatch_keda_requests_total", "api", "metrics_api", "code", codeLabel(code))).Inc()
}

// codeLabel is the code label of an answer: its HTTP status. answer gives
// five of them, so the label stays bounded.
func codeLabel(code int) string { return strconv.Itoa(code) }

func (s *Signals) answer(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return writeJSON(w, http.StatusMethodNotAllowed, Error{Error: "method " + r.Method + " not allowed; use GET"})
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), PathPrefix+"targets")
	if !ok || (rest != "" && rest[0] != '/') {
		return writeJSON(w, http.StatusNotFound, Error{Error: "no such path " + r.URL.Path + "; try " + PathPrefix + "targets"})
	}
	rest = strings.TrimPrefix(rest, "/")
	ruleEsc, targetEsc, _ := strings.Cut(rest, "/")
	rule, err := url.PathUnescape(ruleEsc)
	if err != nil {
		return writeJSON(w, http.StatusBadRequest, Error{Error: "rule " + ruleEsc + ": " + err.Error()})
	}
	if rule == "" || targetEsc == "" {
		sigs, stale, err := s.list(rule)
		if err != nil {
			return writeError(w, err)
		}
		l := List{Targets: make([]Signal, len(sigs))}
		for i := range sigs {
			l.Targets[i] = signalOf(sigs[i], stale[i])
		}
		return writeJSON(w, http.StatusOK, l)
	}
	target, err := parseEscapedTarget(targetEsc)
	if err != nil {
		return writeJSON(w, http.StatusBadRequest, Error{Error: err.Error()})
	}
	sig, stale, err := s.get(rule, target)
	if err != nil {
		return writeError(w, err)
	}
	out := signalOf(sig, stale)
	if stale && !allowStale(r.URL.Query().Get("allow_stale")) {
		s.staleHTTP.Inc()
		return writeJSON(w, http.StatusServiceUnavailable, Error{
			Error: "the signal of rule " + strconv.Quote(rule) + " target " + sig.Target + " is stale: valid until " +
				sig.ValidUntil.Format(time.RFC3339) + "; is the rule still evaluated? (add allow_stale=true to the query to be served it)",
			Signal: &out})
	}
	return writeJSON(w, http.StatusOK, out)
}

// parseEscapedTarget reads the {target} part of a path: a selector when it
// starts with '{' (escaped or not), else name=value pairs, each name and
// value unescaped on its own so that an escaped ',' or '=' stays in it.
func parseEscapedTarget(esc string) (string, error) {
	whole, err := url.PathUnescape(esc)
	if err != nil {
		return "", errors.New("target " + esc + ": " + err.Error())
	}
	if strings.HasPrefix(strings.TrimSpace(whole), "{") {
		return strings.TrimSpace(whole), nil
	}
	m := map[string]string{}
	for _, p := range strings.Split(esc, ",") {
		k, v, ok := strings.Cut(p, "=")
		kk, err1 := url.PathUnescape(k)
		vv, err2 := url.PathUnescape(v)
		switch {
		case errors.Join(err1, err2) != nil:
			return "", errors.New("target " + esc + ": " + errors.Join(err1, err2).Error())
		case !ok || kk == "":
			return "", errors.New("target " + whole + ": " + targetSyntax)
		}
		if _, dup := m[kk]; dup {
			return "", errors.New("target " + whole + " names label " + kk + " twice")
		}
		m[kk] = vv
	}
	return identity(m), nil
}

func allowStale(v string) bool { return v == "true" || v == "1" }

func writeError(w http.ResponseWriter, err error) int {
	var unk *errUnknown
	if errors.As(err, &unk) {
		e := Error{Error: err.Error(), KnownTotal: unk.total}
		if unk.target == "" {
			e.KnownRules = unk.known
		} else {
			e.KnownTargets = unk.known
		}
		return writeJSON(w, http.StatusNotFound, e)
	}
	return writeJSON(w, http.StatusBadRequest, Error{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
	return code
}
