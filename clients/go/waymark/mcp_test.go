package waymark

import (
	"context"
	"errors"
	"testing"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// mcpServer answers McpService with the next error of its script, then success.
type mcpServer struct {
	waymarkv1.UnimplementedMcpServiceServer
	errorScript
}

func (s *mcpServer) PutMcpServer(_ context.Context, req *waymarkv1.PutMcpServerRequest) (*waymarkv1.PutMcpServerResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.PutMcpServerResponse{Server: req.GetServer(), Created: true}, nil
}

func (s *mcpServer) ListMcpServers(_ context.Context, req *waymarkv1.ListMcpServersRequest) (*waymarkv1.ListMcpServersResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.ListMcpServersResponse{Servers: []*waymarkv1.McpServer{{Name: "billing", Health: &waymarkv1.McpServerHealth{State: "unreachable", ConsecutiveFailures: 2}}}}, nil
}

func (s *mcpServer) RemoveMcpServer(_ context.Context, req *waymarkv1.RemoveMcpServerRequest) (*waymarkv1.RemoveMcpServerResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.RemoveMcpServerResponse{}, nil
}

func serveMcp(t *testing.T, s *mcpServer) string {
	return serveGRPC(t, func(srv *grpc.Server) { waymarkv1.RegisterMcpServiceServer(srv, s) })
}

// PutMcpServer and ListMcpServers ride through UNAVAILABLE and carry the client's namespace;
// RemoveMcpServer is sent once (a repeat of an applied removal would answer NOT_FOUND).
func TestMcpCallsCarryTheNamespaceAndRetryOnlyWhatIsSafe(t *testing.T) {
	ctx := context.Background()
	restarting := func() []error {
		return []error{status.Error(codes.Unavailable, "restarting"), status.Error(codes.Unavailable, "restarting")}
	}
	billing := &waymarkv1.McpServer{
		Name: "billing",
		Transport: &waymarkv1.McpServer_Http{Http: &waymarkv1.McpHttpTransport{
			Url: "http://127.0.0.1:8931/mcp",
			// A header by reference: each replica reads MCP_BILLING_TOKEN from its own environment.
			HeaderRefs: map[string]*waymarkv1.McpSecretRef{
				"authorization": {Source: &waymarkv1.McpSecretRef_Env{Env: "MCP_BILLING_TOKEN"}, Prefix: "Bearer "},
			},
		}},
		Tools: map[string]*waymarkv1.McpToolRule{"refund": {Policy: waymarkv1.ToolPolicy_TOOL_POLICY_ASK}},
	}
	put := &mcpServer{errorScript: errorScript{script: restarting()}}
	client := dialTest(t, serveMcp(t, put), WithNamespace("payments"))
	res, err := client.PutMcpServer(ctx, billing)
	if err != nil || len(put.requests) != 3 || !res.GetCreated() {
		t.Fatalf("put: %v after %d attempts, want success after 3", err, len(put.requests))
	}
	sent := put.requests[2].(*waymarkv1.PutMcpServerRequest)
	if sent.GetNamespace() != "payments" || !proto.Equal(sent.GetServer(), billing) {
		t.Fatalf("put sent %v", sent)
	}
	list := &mcpServer{errorScript: errorScript{script: restarting()}}
	servers, err := dialTest(t, serveMcp(t, list), WithNamespace("payments")).ListMcpServers(ctx)
	if err != nil || len(list.requests) != 3 || list.requests[2].(*waymarkv1.ListMcpServersRequest).GetNamespace() != "payments" {
		t.Fatalf("list: %v after %d attempts", err, len(list.requests))
	}
	if len(servers) != 1 || servers[0].GetHealth().GetState() != "unreachable" || servers[0].GetHealth().GetConsecutiveFailures() != 2 {
		t.Fatalf("list answered %v", servers)
	}
	remove := &mcpServer{errorScript: errorScript{script: []error{status.Error(codes.Unavailable, "restarting")}}}
	if err := dialTest(t, serveMcp(t, remove), WithNamespace("payments")).RemoveMcpServer(ctx, "billing"); err == nil {
		t.Fatal("remove: want the UNAVAILABLE of its one attempt")
	}
	if len(remove.requests) != 1 || remove.requests[0].(*waymarkv1.RemoveMcpServerRequest).GetName() != "billing" {
		t.Fatalf("remove was sent %d times: %v", len(remove.requests), remove.requests)
	}
	if _, err := client.PutMcpServer(ctx, nil); err == nil {
		t.Fatal("a nil server must fail before the call")
	}
}

func TestMcpServerNotFoundIsTyped(t *testing.T) {
	notFound, _ := status.New(codes.NotFound, "no such MCP server").WithDetails(
		&errdetails.ErrorInfo{Reason: ReasonMcpServerNotFound, Domain: "waymark", Metadata: map[string]string{"server": "billing"}})
	s := &mcpServer{errorScript: errorScript{script: []error{notFound.Err()}}}
	err := dialTest(t, serveMcp(t, s)).RemoveMcpServer(context.Background(), "billing")
	var missing *McpServerNotFoundError
	if !errors.As(err, &missing) || missing.Server != "billing" || missing.Code != codes.NotFound {
		t.Fatalf("want McpServerNotFoundError, got %#v", err)
	}
}
