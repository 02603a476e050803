package waymark

import (
	"context"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/grpc"
)

// purgeServer answers PurgeRuns after its script's errors.
type purgeServer struct {
	waymarkv1.UnimplementedRunServiceServer
	errorScript
}

func (s *purgeServer) PurgeRuns(_ context.Context, req *waymarkv1.PurgeRunsRequest) (*waymarkv1.PurgeRunsResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.PurgeRunsResponse{DryRun: req.GetDryRun(), RootRuns: 2, Runs: 3, Entries: 12}, nil
}

// PurgeRuns sends the filter as given and is retried through a restart.
func TestPurgeRunsSendsTheFilterAndRetries(t *testing.T) {
	s := &purgeServer{errorScript: errorScript{script: unavailableTwice()}}
	client := dialTest(t, serveGRPC(t, func(srv *grpc.Server) { waymarkv1.RegisterRunServiceServer(srv, s) }), WithNamespace("ops"))
	res, err := client.PurgeRuns(context.Background(), PurgeOptions{
		OlderThan: 72 * time.Hour, Statuses: []waymarkv1.RunStatus{waymarkv1.RunStatus_RUN_STATUS_FAILED}, Workflow: "refund", DryRun: true, Limit: 50,
	})
	if err != nil || s.calls() != 3 {
		t.Fatalf("purge: %v after %d attempts, want success after 3", err, s.calls())
	}
	if !res.GetDryRun() || res.GetRuns() != 3 || res.GetRootRuns() != 2 || res.GetEntries() != 12 {
		t.Fatalf("purge answered %v", res)
	}
	req := s.requests[2].(*waymarkv1.PurgeRunsRequest)
	if req.GetNamespace() != "ops" || req.GetOlderThan().AsDuration() != 72*time.Hour || len(req.GetStatuses()) != 1 ||
		req.GetStatuses()[0] != waymarkv1.RunStatus_RUN_STATUS_FAILED || req.GetWorkflow() != "refund" || !req.GetDryRun() || req.GetLimit() != 50 {
		t.Fatalf("purge sent %v", req)
	}
}
