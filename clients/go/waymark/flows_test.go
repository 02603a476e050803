package waymark

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// refundFlowYAML is the refund flow of the README, as a team keeps it in a file (shared with the
// Python client's tests, as test/wire is).
var refundFlowYAML = func() string {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "test", "flows", "refund-flow.yaml"))
	if err != nil {
		panic(err)
	}
	return string(raw)
}()

// The same flow in protobuf JSON, lowerCamelCase names: ParseFlow reads both to one message.
const refundFlowJSON = `{
  "name": "refund-flow", "description": "Refunds an order after a person approves it.",
  "stateSchema": {"type": "object", "properties": {"order": {"type": "string", "minLength": 1},
    "amount": {"type": "number", "exclusiveMinimum": 0}, "decision": {"type": "object"}, "refund": {"type": "object"}},
    "required": ["order", "amount"]},
  "start": "approve",
  "nodes": [
    {"id": "approve", "approval": {"title": "Refund ${{ state.amount }} for order {{ state.order }}?", "deadline": "86400s",
      "onTimeout": "APPROVAL_TIMEOUT_DECISION_DENY", "into": "decision"}},
    {"id": "approved", "branch": {}},
    {"id": "charge", "tool": {"tool": "charge_back", "arguments": {"order": "{{ state.order }}", "amount": "{{ state.amount }}"}, "into": "refund"}},
    {"id": "refunded", "end": {"output": {"status": "refunded", "refundId": "{{ state.refund.refundId }}"}}},
    {"id": "declined", "end": {"output": {"status": "declined", "by": "{{ state.decision.by }}"}}}
  ],
  "edges": [{"from": "approve", "to": "approved"}, {"from": "approved", "to": "charge", "condition": "state.decision.approved"},
    {"from": "approved", "to": "declined"}, {"from": "charge", "to": "refunded"}]
}`

func TestParseFlowReadsJSONAndYAMLAlike(t *testing.T) {
	fromYAML, err := ParseFlow([]byte(refundFlowYAML))
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := ParseFlow([]byte(refundFlowJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(fromYAML, fromJSON) {
		t.Fatalf("YAML and JSON differ:\n%v\n%v", fromYAML, fromJSON)
	}
	approval := fromYAML.GetNodes()[0].GetApproval()
	if approval.GetDeadline().AsDuration().Hours() != 24 || approval.GetOnTimeout() != waymarkv1.ApprovalTimeoutDecision_APPROVAL_TIMEOUT_DECISION_DENY {
		t.Fatalf("durations and enums by name: %v", approval)
	}
	if fromYAML.GetNodes()[2].GetTool().GetArguments().GetStructValue().GetFields()["order"].GetStringValue() != "{{ state.order }}" {
		t.Fatalf("tool arguments: %v", fromYAML.GetNodes()[2])
	}
}

func TestParseFlowRefusesWhatIsNotAFlow(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":            "  \n",
		"unknown field":    "name: f\nstart: a\nnodez: []\n",
		"not YAML":         "name: [unclosed\n",
		"a non-string key": "name: f\nstate_schema:\n  properties:\n    1: {type: string}\n",
		"wrong type":       `{"name": "f", "nodes": {"id": "a"}}`,
	} {
		if flow, err := ParseFlow([]byte(doc)); err == nil || !strings.HasPrefix(err.Error(), "waymark: ") {
			t.Errorf("%s: want an error, got %v %v", name, flow, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// flowServer answers FlowService with the next error of its script, then success.
type flowServer struct {
	waymarkv1.UnimplementedFlowServiceServer
	errorScript
}

func (s *flowServer) RegisterFlow(_ context.Context, req *waymarkv1.RegisterFlowRequest) (*waymarkv1.RegisterFlowResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.RegisterFlowResponse{Flow: &waymarkv1.FlowVersion{Flow: req.GetFlow(), Version: "1", Digest: "sha256:x"}, Created: true}, nil
}

func (s *flowServer) GetFlow(_ context.Context, req *waymarkv1.GetFlowRequest) (*waymarkv1.GetFlowResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.GetFlowResponse{Flow: &waymarkv1.FlowVersion{Flow: &waymarkv1.Flow{Name: req.GetName()}, Version: "1"}}, nil
}

func (s *flowServer) ListFlows(_ context.Context, req *waymarkv1.ListFlowsRequest) (*waymarkv1.ListFlowsResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.ListFlowsResponse{Flows: []*waymarkv1.FlowVersion{{Version: "1"}}}, nil
}

func serveFlows(t *testing.T, s *flowServer) string {
	return serveGRPC(t, func(srv *grpc.Server) { waymarkv1.RegisterFlowServiceServer(srv, s) })
}

// RegisterFlow, GetFlow and ListFlows ride through UNAVAILABLE (a registration of the same
// content again is a no-op on the server), and each request carries the client's namespace.
func TestFlowCallsRetryAndCarryTheNamespace(t *testing.T) {
	ctx := context.Background()
	restarting := func() []error {
		return []error{status.Error(codes.Unavailable, "restarting"), status.Error(codes.Unavailable, "restarting")}
	}
	calls := []func(c *Client) error{
		func(c *Client) error { _, err := c.RegisterFlowDocument(ctx, []byte(refundFlowYAML)); return err },
		func(c *Client) error { _, err := c.GetFlow(ctx, "refund-flow", ""); return err },
		func(c *Client) error { _, err := c.ListFlows(ctx); return err },
	}
	for i, call := range calls {
		s := &flowServer{errorScript: errorScript{script: restarting()}}
		client := dialTest(t, serveFlows(t, s), WithNamespace("payments"))
		if err := call(client); err != nil || len(s.requests) != 3 {
			t.Fatalf("call %d: %v after %d attempts, want success after 3", i, err, len(s.requests))
		}
		if ns := s.requests[2].(interface{ GetNamespace() string }).GetNamespace(); ns != "payments" {
			t.Fatalf("call %d: namespace %q", i, ns)
		}
	}
	s := &flowServer{}
	client := dialTest(t, serveFlows(t, s))
	if _, err := client.RegisterFlow(ctx, nil); err == nil || len(s.requests) != 0 {
		t.Fatalf("a nil flow must fail before the call: %v", err)
	}
}

func TestFlowErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	invalid, _ := status.New(codes.InvalidArgument, "the flow is invalid").WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "flow.edges[1].condition", Description: "reads undeclared state.x"}}},
		&errdetails.ErrorInfo{Reason: ReasonInvalidFlow, Domain: "waymark", Metadata: map[string]string{"flow": "refund-flow"}})
	notFound, _ := status.New(codes.NotFound, "no such flow").WithDetails(
		&errdetails.ErrorInfo{Reason: ReasonFlowNotFound, Domain: "waymark", Metadata: map[string]string{"flow": "nope", "version": "7"}})
	taken, _ := status.New(codes.AlreadyExists, "taken").WithDetails(
		&errdetails.ErrorInfo{Reason: ReasonFlowNameTaken, Domain: "waymark", Metadata: map[string]string{"flow": "refund"}})
	s := &flowServer{errorScript: errorScript{script: []error{invalid.Err(), notFound.Err(), taken.Err()}}}
	client := dialTest(t, serveFlows(t, s))

	_, err := client.RegisterFlowDocument(ctx, []byte(refundFlowYAML))
	var bad *InvalidFlowError
	var asArgument *InvalidArgumentError
	if !errors.As(err, &bad) || bad.Flow != "refund-flow" || len(bad.FieldViolations) != 1 || bad.FieldViolations[0].Field != "flow.edges[1].condition" || !errors.As(err, &asArgument) {
		t.Fatalf("want InvalidFlowError (also an InvalidArgumentError) with the field path, got %#v", err)
	}
	_, err = client.GetFlow(ctx, "nope", "7")
	var missing *FlowNotFoundError
	if !errors.As(err, &missing) || missing.Flow != "nope" || missing.Version != "7" || missing.Code != codes.NotFound {
		t.Fatalf("want FlowNotFoundError, got %#v", err)
	}
	_, err = client.RegisterFlow(ctx, &waymarkv1.Flow{Name: "refund"})
	var nameTaken *FlowNameTakenError
	if !errors.As(err, &nameTaken) || nameTaken.Flow != "refund" || nameTaken.Code != codes.AlreadyExists {
		t.Fatalf("want FlowNameTakenError, got %#v", err)
	}
}
