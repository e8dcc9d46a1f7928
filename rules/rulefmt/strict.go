package rulefmt

import (
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// fieldInfo locates one YAML key of a struct, possibly inside inlined
// structs.
type fieldInfo struct {
	index []int
	typ   reflect.Type
}

// structFields maps the YAML keys of struct type t to its fields, the way
// yaml.v3 does: the tag's name or else the lower-cased field name, "-"
// skipped, ",inline" structs merged in. A ",inline" map collects the other
// keys; its type is returned as inlineMap.
func structFields(t reflect.Type) (fields map[string]fieldInfo, inlineMap reflect.Type) {
	fields = map[string]fieldInfo{}
	var walk func(t reflect.Type, prefix []int, depth int)
	walk = func(t reflect.Type, prefix []int, depth int) {
		if depth > 8 {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			inline := false
			for o := range strings.SplitSeq(opts, ",") {
				if o == "inline" {
					inline = true
				}
			}
			index := append(append([]int(nil), prefix...), i)
			if inline {
				switch f.Type.Kind() {
				case reflect.Struct:
					walk(f.Type, index, depth+1)
				case reflect.Map:
					if inlineMap == nil {
						inlineMap = f.Type
					}
				}
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			if _, dup := fields[name]; !dup {
				fields[name] = fieldInfo{index: index, typ: f.Type}
			}
		}
	}
	walk(t, nil, 0)
	return fields, inlineMap
}

// strict reports, with their positions, the keys of n that the type t it
// will be decoded into does not know, at every depth. yaml.v3 drops such
// keys silently. Type mismatches are left to the decoder.
func (p *parser) strict(n *yaml.Node, t reflect.Type, where string, depth int) {
	n = resolve(n)
	if n == nil || depth > 16 {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields, inlineMap := structFields(t)
		for _, kv := range p.pairs(n, where) {
			key := kv.k.Value
			if f, ok := fields[key]; ok {
				p.strict(kv.v, f.typ, where+"."+key, depth+1)
				continue
			}
			if inlineMap != nil {
				p.strict(kv.v, inlineMap.Elem(), where+"."+key, depth+1)
				continue
			}
			known := make([]string, 0, len(fields))
			for k := range fields {
				known = append(known, k)
			}
			p.unknown(kv.k, where, known)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for _, kv := range p.pairs(n, where) {
			p.strict(kv.v, t.Elem(), where+"."+kv.k.Value, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for _, c := range n.Content {
			if !p.spend(c) {
				return
			}
			p.strict(c, t.Elem(), where+"[]", depth+1)
		}
	}
}
