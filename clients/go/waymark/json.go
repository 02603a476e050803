package waymark

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// ToValue converts anything encoding/json can marshal (maps, slices, structs with json tags,
// json.RawMessage) into the google.protobuf.Value that carries JSON payloads. nil gives nil:
// the payload is left unset.
func ToValue(v any) (*structpb.Value, error) {
	if v == nil {
		return nil, nil
	}
	if pv, ok := v.(*structpb.Value); ok {
		return pv, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("waymark: payload is not JSON: %w", err)
	}
	out := &structpb.Value{}
	if err := protojson.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("waymark: payload is not JSON: %w", err)
	}
	return out, nil
}

// DecodeValue unmarshals a JSON payload (a run's input or output, an entry's payload) into out,
// as json.Unmarshal would. An unset payload decodes as JSON null.
func DecodeValue(v *structpb.Value, out any) error {
	raw := []byte("null")
	if v != nil {
		var err error
		if raw, err = protojson.Marshal(v); err != nil {
			return fmt.Errorf("waymark: %w", err)
		}
	}
	return json.Unmarshal(raw, out)
}
