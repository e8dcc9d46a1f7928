// Package schemas holds the JSON Schemas (draft 2020-12) of the events
// inferwatch publishes on NATS JetStream: the CloudEvents envelope, and the
// data of each event type (finding, alert, forecast, scale, incident). The files
// beside this one are the reference for consumers in any language; this
// package embeds them and validates events against them in Go.
//
// The schemas describe the Go types of package alerting field by field; a
// test keeps the two in step.
package schemas

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/inferwatch/inferwatch/alerting"
)

// BaseURL is where the schema files are published; each file's $id is
// BaseURL followed by its name.
const BaseURL = "https://github.com/inferwatch/inferwatch/raw/main/docs/schemas/"

// Envelope is the file of the CloudEvents envelope's schema. For the
// types of DataFiles it checks the data too.
const Envelope = "io.inferwatch.cloudevent.schema.json"

// DataFiles maps each event type to the file of its data's schema. The
// report type (alerting.ReportEventType) is not here: its schema lives
// with the report package.
var DataFiles = map[string]string{
	alerting.FindingEventType:  "io.inferwatch.finding.v1.schema.json",
	alerting.AlertEventType:    "io.inferwatch.alert.v1.schema.json",
	alerting.ForecastEventType: "io.inferwatch.forecast.v1.schema.json",
	alerting.ScaleEventType:    "io.inferwatch.scale.v1.schema.json",
	alerting.IncidentEventType: "io.inferwatch.incident.v1.schema.json",
}

//go:embed *.schema.json
var files embed.FS

// FS holds the schema files.
func FS() fs.FS { return files }

// Validator checks events against the schemas. It is safe for concurrent
// use.
type Validator struct {
	envelope *jsonschema.Schema
	data     map[string]*jsonschema.Schema
}

// New compiles the embedded schemas, asserting formats (date-time,
// uri-reference) rather than taking them as annotations.
func New() (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	names, err := fs.Glob(files, "*.schema.json")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schema %s is not JSON: %w", name, err)
		}
		if err := c.AddResource(BaseURL+name, doc); err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
	}
	v := &Validator{data: map[string]*jsonschema.Schema{}}
	if v.envelope, err = c.Compile(BaseURL + Envelope); err != nil {
		return nil, fmt.Errorf("compiling %s: %w", Envelope, err)
	}
	for typ, name := range DataFiles {
		if v.data[typ], err = c.Compile(BaseURL + name); err != nil {
			return nil, fmt.Errorf("compiling %s: %w", name, err)
		}
	}
	return v, nil
}

// Validate checks one event as published (the body of a NATS message):
// the envelope, and the data against the schema its type names.
func (v *Validator) Validate(event []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(event))
	if err != nil {
		return fmt.Errorf("the event is not JSON: %w", err)
	}
	if err := v.envelope.Validate(inst); err != nil {
		return fmt.Errorf("the envelope does not match %s: %w", Envelope, err)
	}
	return nil
}

// ValidateData checks the data of an event of type typ.
func (v *Validator) ValidateData(typ string, data []byte) error {
	sch, ok := v.data[typ]
	if !ok {
		known := make([]string, 0, len(v.data))
		for t := range v.data {
			known = append(known, t)
		}
		sort.Strings(known)
		return fmt.Errorf("no data schema for event type %q (there are: %s)", typ, strings.Join(known, ", "))
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("the data of a %s event is not JSON: %w", typ, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("the data does not match %s: %w", DataFiles[typ], err)
	}
	return nil
}
