package worker

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// SchemaOf derives the JSON Schema of a Go type as encoding/json sees it: a struct is an object
// whose properties are its exported fields under their json names (a field without omitempty,
// omitzero or a pointer type is required; `json:"-"` is left out; embedded structs are
// flattened), strings, booleans, integers and floats are their JSON types, slices and arrays are
// arrays ([]byte is a base64 string), maps with string keys are objects, time.Time is a
// date-time string, and interfaces, json.RawMessage and types with their own MarshalJSON are any
// value ({}). A field's `description:"..."` tag becomes its description. A recursive type gives
// {} where it recurs. Register uses it for a tool's input and output unless InputSchema or
// OutputSchema are given.
func SchemaOf(t reflect.Type) map[string]any {
	return schemaOf(t, map[reflect.Type]bool{})
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

func schemaOf(t reflect.Type, seen map[reflect.Type]bool) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType || t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		return map[string]any{}
	case t.Implements(textType) || reflect.PointerTo(t).Implements(textType):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), seen)}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return map[string]any{"type": "object"}
		}
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem(), seen)}
	case reflect.Struct:
		if seen[t] {
			return map[string]any{}
		}
		seen[t] = true
		defer delete(seen, t)
		properties := map[string]any{}
		required := []string{}
		addFields(t, seen, properties, &required)
		out := map[string]any{"type": "object", "properties": properties}
		if len(required) > 0 {
			out["required"] = required
		}
		return out
	}
	return map[string]any{} // interfaces and anything else: any JSON value
}

func addFields(t reflect.Type, seen map[reflect.Type]bool, properties map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, flags, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				addFields(inner, seen, properties, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		schema := schemaOf(f.Type, seen)
		if d := f.Tag.Get("description"); d != "" {
			schema["description"] = d
		}
		properties[name] = schema
		optional := f.Type.Kind() == reflect.Pointer || hasFlag(flags, "omitempty") || hasFlag(flags, "omitzero")
		if !optional {
			*required = append(*required, name)
		}
	}
}

func hasFlag(flags, flag string) bool {
	for _, f := range strings.Split(flags, ",") {
		if f == flag {
			return true
		}
	}
	return false
}
