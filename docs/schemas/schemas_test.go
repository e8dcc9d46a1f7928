package schemas_test

import (
	"encoding/json"
	"io/fs"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inferwatch/inferwatch/alerting"
	"github.com/inferwatch/inferwatch/docs/schemas"
)

// readSchema decodes one schema file.
func readSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := fs.ReadFile(schemas.FS(), name)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

// TestSchemasFollowTheGoTypes walks the JSON fields of each event's Go
// type and compares them with its schema: the same properties, required
// exactly when the field is always written (no omitempty), of the JSON
// type the field encodes to (nullable for JSONFloat), date-time for
// times, closed (additionalProperties false) for structs and open for
// the label and detail maps; nested structs likewise.
func TestSchemasFollowTheGoTypes(t *testing.T) {
	// NewFindingEvent writes a Finding's float64 fields as JSONFloat, so
	// that non-finite values become null.
	findingFloats := map[string]bool{"value": true, "expected": true, "lower": true, "upper": true, "score": true}
	f := func(file string, typ reflect.Type, nullable map[string]bool) {
		t.Helper()
		doc := readSchema(t, file)
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" || doc["$id"] != schemas.BaseURL+file {
			t.Errorf("%s: $schema %v, $id %v", file, doc["$schema"], doc["$id"])
		}
		w := walker{t: t, file: file, doc: doc, nullable: nullable}
		w.walk("", doc, typ)
	}
	f("io.inferwatch.finding.v1.schema.json", reflect.TypeFor[alerting.Finding](), findingFloats)
	f("io.inferwatch.alert.v1.schema.json", reflect.TypeFor[alerting.AlertData](), nil)
	f("io.inferwatch.forecast.v1.schema.json", reflect.TypeFor[alerting.ForecastData](), nil)
	f("io.inferwatch.scale.v1.schema.json", reflect.TypeFor[alerting.ScaleData](), nil)
	f("io.inferwatch.incident.v1.schema.json", reflect.TypeFor[alerting.IncidentData](), nil)
	f(schemas.Envelope, reflect.TypeFor[alerting.Event](), nil)

	// Every data schema is named, and every file is one of them or the
	// envelope.
	names, _ := fs.Glob(schemas.FS(), "*.schema.json")
	want := []string{schemas.Envelope}
	for _, n := range schemas.DataFiles {
		want = append(want, n)
	}
	sort.Strings(names)
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Errorf("schema files %v, want %v", names, want)
	}
}

// TestSchemaEnumsFollowTheConstants: the closed sets of values the
// schemas list are alerting's constants.
func TestSchemaEnumsFollowTheConstants(t *testing.T) {
	f := func(file, pointer string, want any) {
		t.Helper()
		got := lookup(t, readSchema(t, file), pointer)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s: %v, want %v", file, pointer, got, want)
		}
	}
	f("io.inferwatch.alert.v1.schema.json", "/properties/status/enum", []any{
		string(alerting.StatusPending), string(alerting.StatusFiring), string(alerting.StatusRepeat), string(alerting.StatusResolved),
		string(alerting.StatusInactive)})
	f("io.inferwatch.alert.v1.schema.json", "/properties/reason/enum", []any{string(alerting.ReasonNormal), string(alerting.ReasonAbsent),
		string(alerting.ReasonForgotten), string(alerting.ReasonRuleRemoved)})
	f(schemas.Envelope, "/properties/type/enum", []any{alerting.FindingEventType, alerting.AlertEventType,
		alerting.ForecastEventType, alerting.ScaleEventType, alerting.ReportEventType, alerting.IncidentEventType})
	f("io.inferwatch.incident.v1.schema.json", "/properties/status/enum", []any{
		string(alerting.IncidentOpened), string(alerting.IncidentUpdated), string(alerting.IncidentResolved)})
	f(schemas.Envelope, "/properties/specversion/const", alerting.CloudEventsSpecVersion)
	f(schemas.Envelope, "/properties/datacontenttype/const", "application/json")
	f("io.inferwatch.scale.v1.schema.json", "/properties/tier/enum", []any{0.0, 1.0, 2.0, 3.0})
	// The envelope checks the data of each type against its file.
	doc := readSchema(t, schemas.Envelope)
	refs := map[string]string{}
	for _, c := range doc["allOf"].([]any) {
		typ := lookup(t, c.(map[string]any), "/if/properties/type/const").(string)
		refs[typ] = lookup(t, c.(map[string]any), "/then/properties/data/$ref").(string)
	}
	if !reflect.DeepEqual(refs, schemas.DataFiles) {
		t.Errorf("the envelope checks data by type with %v, want %v", refs, schemas.DataFiles)
	}
}

// lookup follows a JSON pointer (without escapes) from v.
func lookup(t *testing.T, v any, pointer string) any {
	t.Helper()
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: %q is not under an object", pointer, tok)
		}
		if v, ok = m[tok]; !ok {
			t.Fatalf("%s: no %q", pointer, tok)
		}
	}
	return v
}

type walker struct {
	t        *testing.T
	file     string
	doc      map[string]any
	nullable map[string]bool // top-level float64 fields written as JSONFloat
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	jsonFloatType = reflect.TypeFor[alerting.JSONFloat]()
	rawType       = reflect.TypeFor[json.RawMessage]()
)

// resolve follows a local $ref.
func (w *walker) resolve(s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		if !strings.HasPrefix(ref, "#/") {
			w.t.Fatalf("%s: $ref %q is not local", w.file, ref)
		}
		s = lookup(w.t, w.doc, strings.TrimPrefix(ref, "#")).(map[string]any)
	}
}

// types is the schema's type keyword as a set: a string or a list.
func types(s map[string]any) []string {
	var out []string
	switch v := s["type"].(type) {
	case string:
		out = []string{v}
	case []any:
		for _, x := range v {
			out = append(out, x.(string))
		}
	}
	sort.Strings(out)
	return out
}

func (w *walker) wantType(path string, s map[string]any, want ...string) {
	w.t.Helper()
	if got := types(s); !slices.Equal(got, want) {
		w.t.Errorf("%s %s: type %v, want %v", w.file, path, got, want)
	}
}

func (w *walker) walk(path string, s map[string]any, typ reflect.Type) {
	w.t.Helper()
	s = w.resolve(s)
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem() // an omitempty pointer: absent, never null
	}
	switch {
	case typ == timeType:
		w.wantType(path, s, "string")
		if s["format"] != "date-time" {
			w.t.Errorf("%s %s: format %v, want date-time", w.file, path, s["format"])
		}
		return
	case typ == jsonFloatType:
		w.wantType(path, s, "null", "number")
		return
	case typ == rawType:
		w.wantType(path, s, "object")
		return
	}
	switch typ.Kind() {
	case reflect.String:
		if _, isEnum := s["enum"]; isEnum {
			return // checked against the constants
		}
		if _, isConst := s["const"]; isConst {
			return
		}
		w.wantType(path, s, "string")
	case reflect.Float64:
		w.wantType(path, s, "number")
	case reflect.Int:
		w.wantType(path, s, "integer")
	case reflect.Bool:
		w.wantType(path, s, "boolean")
	case reflect.Map:
		w.wantType(path, s, "object")
		switch typ.Elem().Kind() {
		case reflect.String: // labels: any name, string values
			ap, _ := s["additionalProperties"].(map[string]any)
			if types(ap) == nil || types(ap)[0] != "string" || s["properties"] != nil {
				w.t.Errorf("%s %s: a map of strings wants additionalProperties {type: string} and no properties", w.file, path)
			}
		case reflect.Slice: // lists by label: arrays of strings
			ap, _ := s["additionalProperties"].(map[string]any)
			items, _ := ap["items"].(map[string]any)
			if types(ap) == nil || types(ap)[0] != "array" || types(items) == nil || types(items)[0] != "string" || s["properties"] != nil {
				w.t.Errorf("%s %s: a map of string lists wants additionalProperties {type: array, items: {type: string}} and no properties", w.file, path)
			}
		case reflect.Struct: // levels by signal: any name, each an object
			ap, _ := s["additionalProperties"].(map[string]any)
			if ap == nil || s["properties"] != nil {
				w.t.Errorf("%s %s: a map of objects wants additionalProperties {the object} and no properties", w.file, path)
				return
			}
			w.walk(path+"{}", ap, typ.Elem())
		case reflect.Interface: // details: open
			if _, has := s["additionalProperties"]; has || s["properties"] != nil {
				w.t.Errorf("%s %s: an open map wants no additionalProperties or properties", w.file, path)
			}
		default:
			w.t.Errorf("%s %s: no rule for %s", w.file, path, typ)
		}
	case reflect.Slice:
		w.wantType(path, s, "array")
		items, ok := s["items"].(map[string]any)
		if !ok {
			w.t.Errorf("%s %s: an array without items", w.file, path)
			return
		}
		w.walk(path+"[]", items, typ.Elem())
	case reflect.Struct:
		w.walkStruct(path, s, typ)
	default:
		w.t.Errorf("%s %s: no rule for %s", w.file, path, typ)
	}
}

func (w *walker) walkStruct(path string, s map[string]any, typ reflect.Type) {
	w.t.Helper()
	w.wantType(path, s, "object")
	if s["additionalProperties"] != false {
		w.t.Errorf("%s %s: a struct's object wants additionalProperties false", w.file, path)
	}
	props, _ := s["properties"].(map[string]any)
	var required []string
	for _, r := range s["required"].([]any) {
		required = append(required, r.(string))
	}
	var fields, always []string
	for _, sf := range reflect.VisibleFields(typ) {
		if !sf.IsExported() || (sf.Anonymous && sf.Tag.Get("json") == "") {
			continue // an embedded struct's fields are the object's own
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		fields = append(fields, name)
		if !strings.Contains(opts, "omitempty") {
			always = append(always, name)
		}
		p, ok := props[name].(map[string]any)
		if !ok {
			w.t.Errorf("%s: %s.%s (json %q) is not among the schema's properties", w.file, typ.Name(), sf.Name, name)
			continue
		}
		ft := sf.Type
		if path == "" && w.nullable[name] {
			ft = jsonFloatType
		}
		w.walk(path+"/"+name, p, ft)
	}
	var inSchema []string
	for k := range props {
		inSchema = append(inSchema, k)
	}
	for _, l := range [][]string{fields, always, inSchema, required} {
		sort.Strings(l)
	}
	if !slices.Equal(fields, inSchema) {
		w.t.Errorf("%s %s: properties %v, the Go type %s has %v", w.file, path, inSchema, typ, fields)
	}
	if !slices.Equal(always, required) {
		w.t.Errorf("%s %s: required %v, the Go type %s always writes %v", w.file, path, required, typ, always)
	}
}

// events returns one event of each type, as the daemon encodes them, with
// undefined figures (one-sided bands, no estimate, no accuracy yet).
func events(t *testing.T) map[string][]byte {
	t.Helper()
	at := time.Date(2026, 11, 25, 14, 34, 0, 0, time.UTC)
	labels := map[string]string{"model": "qwen2.5-32b-instruct", "team": "serving"}
	series := `{model="qwen2.5-32b-instruct"}`
	out := map[string][]byte{}
	add := func(name string, ev alerting.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	fd := alerting.Finding{Kind: "anomaly", Group: "capacity", Rule: "request_rate", Detector: "sigma", Labels: labels,
		Series: series, WindowStart: at.Add(-2 * time.Minute), WindowEnd: at, Value: 12.16, ValueTime: at.Add(-time.Minute),
		Expected: 6.89, Lower: math.Inf(-1), Upper: 8.07, Score: 4.47, Severity: "critical"}
	ev, err := alerting.NewFindingEvent(fd, "")
	add("finding", ev, err)
	fd.Kind, fd.Detector, fd.Expected, fd.Lower, fd.Upper = "correlation", "correlate", math.NaN(), math.NaN(), math.NaN()
	fd.Details = map[string]any{"pearson": 0.91, "p_value": 1e-9, "n": 120, "best_lag_seconds": 60}
	ev, err = alerting.NewFindingEvent(fd, "")
	add("finding with details", ev, err)
	ad := alerting.AlertData{Status: alerting.StatusPending, Group: "capacity", Rule: "request_rate", Kind: "anomaly", Detector: "sigma",
		Series: series, Labels: labels, Severity: "critical", ActiveAt: at.Add(-2 * time.Minute), LastAnomalousAt: at, Time: at,
		Value: 12.16, ValueTime: at, Expected: 6.89, Lower: alerting.JSONFloat(math.Inf(-1)), Upper: 8.07, Score: 4.47,
		Summary: "capacity/request_rate: anomalous", Description: "…"}
	ev, err = alerting.NewAlertEvent(ad, "")
	add("alert pending", ev, err)
	ad.Status, ad.FiredAt = alerting.StatusFiring, &at
	ev, err = alerting.NewAlertEvent(ad, "")
	add("alert firing", ev, err)
	resolved := at.Add(10 * time.Minute)
	ad.Status, ad.ResolvedAt, ad.Time = alerting.StatusResolved, &resolved, resolved
	ev, err = alerting.NewAlertEvent(ad, "/inferwatch/eu-1")
	add("alert resolved", ev, err)
	seen := at.Add(2 * time.Minute)
	ad.Reason, ad.LastSeenAt, ad.LastValue = alerting.ReasonAbsent, &seen, 11.5
	ev, err = alerting.NewAlertEvent(ad, "")
	add("alert resolved as absent", ev, err)
	ad.Status, ad.FiredAt, ad.ResolvedAt, ad.Reason = alerting.StatusInactive, nil, nil, alerting.ReasonNormal
	ev, err = alerting.NewAlertEvent(ad, "")
	add("alert inactive", ev, err)
	undefined := alerting.JSONFloat(math.NaN())
	fc := alerting.ForecastData{Group: "forecasting", Rule: "request_rate", Labels: labels, Series: series, Origin: at,
		LastValue: 6.9, StepSeconds: 60, HorizonSeconds: 120, Model: "naive", Fallback: "hw_daily needs 2 periods of history", Level: 0.9,
		Points: []alerting.ForecastPoint{
			{Time: at.Add(time.Minute), Mean: 7, Lower: 6, Upper: 8},
			{Time: at.Add(2 * time.Minute), Mean: 7.1, Lower: undefined, Upper: alerting.JSONFloat(math.Inf(1))},
		},
		Peak: 7.1, PeakTime: at.Add(2 * time.Minute), UpperPeak: alerting.JSONFloat(math.Inf(1)),
		Accuracy: alerting.ForecastAccuracy{LeadSeconds: 120, MAE: undefined, Coverage: undefined, NaiveMAE: undefined},
	}
	ev, err = alerting.NewForecastEvent(fc, "")
	add("forecast", ev, err)
	previous := 2
	sc := alerting.ScaleData{Group: "forecasting", Rule: "vllm-qwen-32b", Target: series, Labels: labels, Time: at,
		DesiredReplicas: 3, PreviousDesiredReplicas: &previous, CurrentReplicas: 2, CurrentKnown: true, PredictedLoad: 17.2, PredictedUpper: 19.9,
		CapacityPerReplica: 7, Tier: 3, Reason: "forecast peak 19.9 over 10m needs 3 replicas of 7", ValidUntil: at.Add(10 * time.Minute), ForecastModel: "auto"}
	ev, err = alerting.NewScaleEvent(sc, "")
	add("scale", ev, err)
	sc.Tier, sc.CurrentKnown, sc.CurrentReplicas, sc.ForecastModel, sc.PreviousDesiredReplicas = 0, false, 0, "", nil
	sc.PredictedLoad, sc.PredictedUpper, sc.CapacityPerReplica = alerting.JSONFloat(math.NaN()), alerting.JSONFloat(math.NaN()), alerting.JSONFloat(math.NaN())
	ev, err = alerting.NewScaleEvent(sc, "")
	add("scale without a forecast", ev, err)
	incident := alerting.IncidentData{Status: alerting.IncidentUpdated, Time: at, Incident: alerting.Incident{
		ID: "0123456789abcdef0123456789abcdef", Group: "fleet", Unit: "model=qwen2.5-32b-instruct",
		UnitLabels: map[string]string{"model": "qwen2.5-32b-instruct"}, Where: map[string][]string{"pod": {"qwen-0", "qwen-1"}},
		Start: at.Add(-5 * time.Minute), End: at, OpenedAt: at.Add(-3 * time.Minute), Version: 2,
		Members: []alerting.IncidentMember{{Group: "fleet", Rule: "vllm_ttft_mean", Kind: "anomaly", Detector: "auto", Series: series,
			Labels: labels, Severity: "warning", Signal: "latency", Direction: "up", ActiveAt: at.Add(-5 * time.Minute),
			FiredAt: at.Add(-3 * time.Minute), LastAnomalousAt: at, Value: 2.1, Expected: 0.3, Score: undefined}},
		Timeline: []alerting.IncidentEntry{{Time: at.Add(-3 * time.Minute), What: "fired", Rule: "vllm_ttft_mean", Series: series, Text: "…"}},
		Levels: map[string]alerting.Level{"gpu_util": {Rule: "dcgm_gpu_util", Series: series, Time: at.Add(-4 * time.Minute), Value: 62},
			"kv_cache": {Rule: "vllm_kv_cache_usage", Series: series, Time: at, Value: undefined}},
		Changes:   []alerting.LabelChange{{Label: "version", Old: "0.6.1", New: "0.6.2", Time: at.Add(-40 * time.Minute), Series: series}},
		Diagnosis: alerting.Diagnosis{Name: "engine_stall", Title: "stalled engine", Check: "…", Confidence: 0.5, Held: 3, Total: 6, Evidence: []string{"✓ latency up: …"}},
	}, Summary: "…", Description: "…"}
	ev, err = alerting.NewIncidentEvent(incident, "")
	add("incident updated", ev, err)
	incident.Status, incident.ResolvedAt, incident.Members[0].ResolvedAt = alerting.IncidentResolved, &resolved, &resolved
	incident.Diagnosis = alerting.Diagnosis{Name: alerting.DiagnosisNone, Title: "no diagnosis", Evidence: []string{"vllm_ttft_mean up …"}}
	ev, err = alerting.NewIncidentEvent(incident, "")
	add("incident resolved", ev, err)
	return out
}

// TestEventsOfEveryTypeValidate validates events made by alerting's own
// constructors, with null figures, against the envelope and their data's
// schema.
func TestEventsOfEveryTypeValidate(t *testing.T) {
	v, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range events(t) {
		if err := v.Validate(body); err != nil {
			t.Errorf("%s: %v\n%s", name, err, body)
		}
		var ev alerting.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Fatal(err)
		}
		if err := v.ValidateData(ev.Type, ev.Data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := v.ValidateData(alerting.ReportEventType, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), alerting.FindingEventType) {
		t.Errorf("a type without a data schema: %v", err)
	}
}

// TestInvalidEventsAreRejected changes valid events in one way each and
// expects the schemas to say where.
func TestInvalidEventsAreRejected(t *testing.T) {
	v, err := schemas.New()
	if err != nil {
		t.Fatal(err)
	}
	valid := events(t)
	f := func(base, where string, change func(ev, data map[string]any)) {
		t.Helper()
		var ev map[string]any
		if err := json.Unmarshal(valid[base], &ev); err != nil {
			t.Fatal(err)
		}
		data := ev["data"].(map[string]any)
		change(ev, data)
		body, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		err = v.Validate(body)
		if err == nil {
			t.Errorf("%s changed at %s: accepted\n%s", base, where, body)
			return
		}
		if !strings.Contains(err.Error(), where) {
			t.Errorf("%s changed at %s: the error does not say where:\n%v", base, where, err)
		}
		if d, ok := ev["data"].(map[string]any); ok && (where == "/data" || strings.HasPrefix(where, "/data/")) {
			b, _ := json.Marshal(d)
			if err := v.ValidateData(ev["type"].(string), b); err == nil {
				t.Errorf("%s changed at %s: the data alone is accepted", base, where)
			}
		}
	}
	// The envelope.
	f("finding", "/specversion", func(ev, _ map[string]any) { ev["specversion"] = "0.3" })
	f("finding", "/id", func(ev, _ map[string]any) { ev["id"] = "not-a-hash" })
	f("finding", "/time", func(ev, _ map[string]any) { ev["time"] = "25/11/2026 14:34" })
	f("finding", "/type", func(ev, _ map[string]any) { ev["type"] = "io.inferwatch.finding.anomaly" })
	f("finding", "/datacontenttype", func(ev, _ map[string]any) { ev["datacontenttype"] = "text/plain" })
	f("finding", "/source", func(ev, _ map[string]any) { ev["source"] = "" })
	f("finding", "dataschema", func(ev, _ map[string]any) { ev["dataschema"] = "x" })
	f("finding", "data", func(ev, _ map[string]any) { delete(ev, "data") })
	// A finding.
	f("finding", "/data", func(_, d map[string]any) { delete(d, "severity") })
	f("finding", "/data/severity", func(_, d map[string]any) { d["severity"] = "" })
	f("finding", "/data/kind", func(_, d map[string]any) { d["kind"] = "anomaly.v2" })
	f("finding", "/data/score", func(_, d map[string]any) { d["score"] = 0.5 })
	f("finding", "/data/value", func(_, d map[string]any) { d["value"] = "12.16" })
	f("finding", "/data/window_end", func(_, d map[string]any) { d["window_end"] = 1764081240 })
	f("finding", "/data/labels/model", func(_, d map[string]any) { d["labels"].(map[string]any)["model"] = 3 })
	f("finding", "/data", func(_, d map[string]any) { d["anomaly_score"] = 4.47 })
	f("finding with details", "/data/details", func(_, d map[string]any) { d["details"] = []any{1} })
	// An alert.
	f("alert firing", "/data/status", func(_, d map[string]any) { d["status"] = "active" })
	f("alert firing", "/data/resolved_at", func(_, d map[string]any) { d["resolved_at"] = d["time"] })
	f("alert resolved", "/data", func(_, d map[string]any) { delete(d, "resolved_at") })
	f("alert pending", "/data/fired_at", func(_, d map[string]any) { d["fired_at"] = nil })
	f("alert pending", "/data/rule", func(_, d map[string]any) { d["rule"] = "request rate" })
	// A forecast.
	f("forecast", "/data/points", func(_, d map[string]any) { d["points"] = []any{} })
	f("forecast", "/data/points/0", func(_, d map[string]any) { delete(d["points"].([]any)[0].(map[string]any), "mean") })
	f("forecast", "/data/step_seconds", func(_, d map[string]any) { d["step_seconds"] = nil })
	f("forecast", "/data/level", func(_, d map[string]any) { d["level"] = 90 })
	f("forecast", "/data/accuracy/coverage", func(_, d map[string]any) { d["accuracy"].(map[string]any)["coverage"] = 1.5 })
	f("forecast", "/data/gaps_filled", func(_, d map[string]any) { d["gaps_filled"] = 1.5 })
	// A scale signal.
	f("scale", "/data/tier", func(_, d map[string]any) { d["tier"] = 4 })
	f("scale", "/data/desired_replicas", func(_, d map[string]any) { d["desired_replicas"] = -1 })
	f("scale", "/data/current_known", func(_, d map[string]any) { d["current_known"] = "yes" })
	f("scale", "/data", func(_, d map[string]any) { delete(d, "valid_until") })
}
