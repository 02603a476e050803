package waymark

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// RegisterFlow validates and stores a declarative flow (docs/flows.md). The response's Flow is
// the stored version with its digest; Created is false when the content equalled the latest
// version's and nothing was stored (so registering the same file on every deploy is safe). A
// flow that fails validation returns *InvalidFlowError, whose FieldViolations name the exact
// paths ("flow.edges[3].condition"); a name a code workflow uses returns *FlowNameTakenError.
//
// A registration is retried like a read: a repeat of the same content is a no-op on the server.
// A retry of an attempt the server applied answers Created false.
func (c *Client) RegisterFlow(ctx context.Context, flow *waymarkv1.Flow) (*waymarkv1.RegisterFlowResponse, error) {
	if flow == nil {
		return nil, errors.New("waymark: RegisterFlow needs a flow")
	}
	res, err := c.Flows.RegisterFlow(ctx, &waymarkv1.RegisterFlowRequest{Namespace: c.namespace, Flow: flow})
	return res, mapError(err)
}

// RegisterFlowDocument is RegisterFlow for a flow written as JSON or YAML (ParseFlow reads it).
func (c *Client) RegisterFlowDocument(ctx context.Context, document []byte) (*waymarkv1.RegisterFlowResponse, error) {
	flow, err := ParseFlow(document)
	if err != nil {
		return nil, err
	}
	return c.RegisterFlow(ctx, flow)
}

// GetFlow returns one version of a flow: version "" is the latest. A flow or version the
// namespace does not have returns *FlowNotFoundError.
func (c *Client) GetFlow(ctx context.Context, name, version string) (*waymarkv1.FlowVersion, error) {
	res, err := c.Flows.GetFlow(ctx, &waymarkv1.GetFlowRequest{Namespace: c.namespace, Name: name, Version: version})
	return res.GetFlow(), mapError(err)
}

// ListFlows returns the latest version of each flow of the namespace, by name.
func (c *Client) ListFlows(ctx context.Context) ([]*waymarkv1.FlowVersion, error) {
	res, err := c.Flows.ListFlows(ctx, &waymarkv1.ListFlowsRequest{Namespace: c.namespace})
	return res.GetFlows(), mapError(err)
}

// ParseFlow reads a flow written as JSON or YAML: the protobuf JSON form of waymark.v1.Flow, with
// field names in lowerCamelCase or as in the proto ("state_schema"), durations as strings
// ("86400s") and enums by name. A document that is not valid JSON is read as YAML (YAML 1.2:
// `yes` and `on` stay strings). Unknown fields are an error, so a typo does not pass silently.
func ParseFlow(document []byte) (*waymarkv1.Flow, error) {
	text := bytes.TrimSpace(document)
	if len(text) == 0 {
		return nil, errors.New("waymark: the flow document is empty")
	}
	if !json.Valid(text) {
		var tree any
		if err := yaml.Unmarshal(text, &tree); err != nil {
			return nil, fmt.Errorf("waymark: the flow document is neither JSON nor YAML: %w", err)
		}
		plain, err := jsonTree(tree, "")
		if err != nil {
			return nil, fmt.Errorf("waymark: the flow document: %w", err)
		}
		if text, err = json.Marshal(plain); err != nil {
			return nil, fmt.Errorf("waymark: the flow document: %w", err)
		}
	}
	flow := &waymarkv1.Flow{}
	if err := protojson.Unmarshal(text, flow); err != nil {
		return nil, fmt.Errorf("waymark: the flow document is not a waymark.v1.Flow: %w", err)
	}
	return flow, nil
}

// jsonTree turns what YAML decoded into what encoding/json encodes: mappings must have string
// keys (YAML allows others, JSON does not).
func jsonTree(node any, path string) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, v := range n {
			plain, err := jsonTree(v, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = plain
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(n))
		for k, v := range n {
			key, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("the key %v at %q is not a string", k, "$"+path)
			}
			plain, err := jsonTree(v, path+"."+key)
			if err != nil {
				return nil, err
			}
			out[key] = plain
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			plain, err := jsonTree(v, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = plain
		}
		return out, nil
	default:
		return node, nil
	}
}
