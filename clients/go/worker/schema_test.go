package worker

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type address struct {
	Street string `json:"street"`
	Zip    string `json:"zip,omitempty"`
}

type base struct {
	TraceID string `json:"traceId,omitempty"`
}

type chargeIn struct {
	base
	Order    string          `json:"order" description:"the order to refund"`
	Amount   float64         `json:"amount"`
	Count    int             `json:"count,omitempty"`
	Note     *string         `json:"note"`
	Tags     []string        `json:"tags,omitempty"`
	Meta     map[string]int  `json:"meta,omitempty"`
	At       time.Time       `json:"at,omitzero"`
	Ship     address         `json:"ship"`
	Raw      json.RawMessage `json:"raw,omitempty"`
	Any      any             `json:"any,omitempty"`
	Blob     []byte          `json:"blob,omitempty"`
	Hidden   string          `json:"-"`
	internal string          //nolint:unused // unexported: left out
	Untagged bool
	Children []*chargeIn        `json:"children,omitempty"`
	Lookup   map[int]string     `json:"lookup,omitempty"`
	Nested   map[string]address `json:"nested,omitempty"`
}

func TestSchemaOfFollowsEncodingJSON(t *testing.T) {
	got := SchemaOf(reflect.TypeFor[chargeIn]())
	str := map[string]any{"type": "string"}
	ship := map[string]any{"type": "object", "properties": map[string]any{"street": str, "zip": str}, "required": []string{"street"}}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"traceId":  str,
			"order":    map[string]any{"type": "string", "description": "the order to refund"},
			"amount":   map[string]any{"type": "number"},
			"count":    map[string]any{"type": "integer"},
			"note":     str,
			"tags":     map[string]any{"type": "array", "items": str},
			"meta":     map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}},
			"at":       map[string]any{"type": "string", "format": "date-time"},
			"ship":     ship,
			"raw":      map[string]any{},
			"any":      map[string]any{},
			"blob":     map[string]any{"type": "string", "contentEncoding": "base64"},
			"Untagged": map[string]any{"type": "boolean"},
			// The recursion stops where the type recurs.
			"children": map[string]any{"type": "array", "items": map[string]any{}},
			"lookup":   map[string]any{"type": "object"},
			"nested":   map[string]any{"type": "object", "additionalProperties": ship},
		},
		"required": []string{"order", "amount", "ship", "Untagged"},
	}
	if !reflect.DeepEqual(got, want) {
		a, _ := json.MarshalIndent(got, "", " ")
		b, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("schema:\n%s\nwant:\n%s", a, b)
	}
}

func TestSchemaOfScalarsAndAny(t *testing.T) {
	cases := []struct {
		t    reflect.Type
		want map[string]any
	}{
		{reflect.TypeFor[string](), map[string]any{"type": "string"}},
		{reflect.TypeFor[*int64](), map[string]any{"type": "integer"}},
		{reflect.TypeFor[[]float32](), map[string]any{"type": "array", "items": map[string]any{"type": "number"}}},
		{reflect.TypeFor[map[string]any](), map[string]any{"type": "object", "additionalProperties": map[string]any{}}},
		{reflect.TypeFor[any](), map[string]any{}},
		{reflect.TypeFor[struct{}](), map[string]any{"type": "object", "properties": map[string]any{}}},
	}
	for _, c := range cases {
		if got := SchemaOf(c.t); !reflect.DeepEqual(got, c.want) {
			t.Errorf("SchemaOf(%s) = %v, want %v", c.t, got, c.want)
		}
	}
}
