package waymark

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// forkServer answers ForkRun and CompareRuns. A fork is applied before the script's error is
// returned (an attempt whose answer was lost): a repeat of its key answers created = false, as
// the server does.
type forkServer struct {
	waymarkv1.UnimplementedRunServiceServer
	errorScript
	mu   sync.Mutex
	keys map[string]bool
}

func (s *forkServer) ForkRun(_ context.Context, req *waymarkv1.ForkRunRequest) (*waymarkv1.ForkRunResponse, error) {
	s.mu.Lock()
	if s.keys == nil {
		s.keys = map[string]bool{}
	}
	created := !req.GetDryRun() && !s.keys[req.GetIdempotencyKey()]
	if !req.GetDryRun() {
		s.keys[req.GetIdempotencyKey()] = true
	}
	s.mu.Unlock()
	if err := s.next(req); err != nil {
		return nil, err
	}
	if req.GetDryRun() {
		return &waymarkv1.ForkRunResponse{ForkSeq: req.GetAtSeq(), Preview: &waymarkv1.ForkPreview{ForkSeq: req.GetAtSeq(), Kept: int32(req.GetAtSeq()), Dropped: 2, KeptCostUsd: 0.25}}, nil
	}
	fork := &waymarkv1.Run{Id: "fork-1", ForkedFromRunId: req.GetRunId(), ForkSeq: &req.AtSeq}
	return &waymarkv1.ForkRunResponse{Run: fork, Created: created, ForkSeq: req.GetAtSeq()}, nil
}

func (s *forkServer) CompareRuns(_ context.Context, req *waymarkv1.CompareRunsRequest) (*waymarkv1.CompareRunsResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.CompareRunsResponse{
		A: &waymarkv1.Run{Id: req.GetRunIdA()}, B: &waymarkv1.Run{Id: req.GetRunIdB()},
		Effects: []*waymarkv1.EffectComparison{{Kind: "model", Name: "agent", Difference: waymarkv1.EffectDifference_EFFECT_DIFFERENCE_CHANGED,
			A: &waymarkv1.EffectRecord{Model: "scripted:echo"}, B: &waymarkv1.EffectRecord{Model: "scripted:drip"}}},
	}, nil
}

func serveForks(t *testing.T, s *forkServer) string {
	return serveGRPC(t, func(srv *grpc.Server) { waymarkv1.RegisterRunServiceServer(srv, s) })
}

func unavailableTwice() []error {
	return []error{status.Error(codes.Unavailable, "restarting"), status.Error(codes.Unavailable, "restarting")}
}

// Fork sends every option, and with no key of the caller's makes one up for the call: its retries
// repeat that key, so the server forks once, and the retry's created = false is reported as
// created (nobody else holds the key).
func TestForkRetriesWithOneGeneratedKey(t *testing.T) {
	s := &forkServer{errorScript: errorScript{script: unavailableTwice()}}
	client := dialTest(t, serveForks(t, s), WithNamespace("agents"))
	budget := 2.5
	res, err := client.Fork(context.Background(), "run-1", 7, ForkOptions{
		Input: map[string]any{"order": "A-2"}, Model: "scripted:echo", WorkflowVersion: "2",
		Decision: &ForkDecision{Approve: false, Comment: "not this time", By: "ana"}, BudgetUSD: &budget,
		Labels: map[string]string{"try": "deny"}, Wait: true,
	})
	if err != nil || s.calls() != 3 {
		t.Fatalf("fork: %v after %d attempts, want success after 3", err, s.calls())
	}
	if !res.GetCreated() || res.GetRun().GetForkedFromRunId() != "run-1" || res.GetForkSeq() != 7 {
		t.Fatalf("fork answered %v", res)
	}
	first := s.requests[0].(*waymarkv1.ForkRunRequest)
	for _, r := range s.requests[1:] {
		if key := r.(*waymarkv1.ForkRunRequest).GetIdempotencyKey(); key != first.GetIdempotencyKey() {
			t.Fatalf("a retry sent key %q, the first attempt %q", key, first.GetIdempotencyKey())
		}
	}
	if !strings.HasPrefix(first.GetIdempotencyKey(), "client:") || first.GetDryRun() || !first.GetWait() {
		t.Fatalf("fork sent %v", first)
	}
	d := first.GetDecision()
	if first.GetNamespace() != "agents" || first.GetRunId() != "run-1" || first.GetAtSeq() != 7 || first.GetModel() != "scripted:echo" ||
		first.GetWorkflowVersion() != "2" || first.GetBudgetUsd() != 2.5 || first.GetLabels()["try"] != "deny" ||
		first.GetInput().GetStructValue().GetFields()["order"].GetStringValue() != "A-2" ||
		d.GetApprove() || d.GetComment() != "not this time" || d.GetBy() != "ana" {
		t.Fatalf("fork sent %v", first)
	}
}

// With the caller's key a repeat is the caller's own: the server's created = false stands, and
// options left unset are not sent (the source's input, model and version).
func TestForkWithTheCallersKeyReportsTheServersCreated(t *testing.T) {
	s := &forkServer{errorScript: errorScript{script: unavailableTwice()[:1]}}
	client := dialTest(t, serveForks(t, s))
	res, err := client.Fork(context.Background(), "run-1", 3, ForkOptions{IdempotencyKey: "fork-once"})
	if err != nil || s.calls() != 2 || res.GetCreated() {
		t.Fatalf("fork: %v after %d attempts, created %v; want created false after 2", err, s.calls(), res.GetCreated())
	}
	sent := s.requests[1].(*waymarkv1.ForkRunRequest)
	if sent.GetIdempotencyKey() != "fork-once" || sent.Input != nil || sent.Decision != nil || sent.BudgetUsd != nil || sent.GetModel() != "" || sent.GetWait() {
		t.Fatalf("fork sent %v", sent)
	}
}

// PreviewFork is a dry run: no key, no wait, retried (it writes nothing); CompareRuns is a read.
func TestPreviewForkAndCompareRunsAreRetriedReads(t *testing.T) {
	ctx := context.Background()
	s := &forkServer{errorScript: errorScript{script: unavailableTwice()}}
	client := dialTest(t, serveForks(t, s))
	preview, err := client.PreviewFork(ctx, "run-1", 4, ForkOptions{Model: "scripted:echo", IdempotencyKey: "ignored", Wait: true})
	if err != nil || s.calls() != 3 {
		t.Fatalf("preview: %v after %d attempts", err, s.calls())
	}
	if preview.GetForkSeq() != 4 || preview.GetKept() != 4 || preview.GetDropped() != 2 || preview.GetKeptCostUsd() != 0.25 {
		t.Fatalf("preview answered %v", preview)
	}
	sent := s.requests[2].(*waymarkv1.ForkRunRequest)
	if !sent.GetDryRun() || sent.GetWait() || sent.GetIdempotencyKey() != "" || sent.GetModel() != "scripted:echo" {
		t.Fatalf("preview sent %v", sent)
	}
	cmp := &forkServer{errorScript: errorScript{script: unavailableTwice()}}
	res, err := dialTest(t, serveForks(t, cmp), WithNamespace("agents")).CompareRuns(ctx, "run-a", "run-b")
	if err != nil || cmp.calls() != 3 {
		t.Fatalf("compare: %v after %d attempts", err, cmp.calls())
	}
	req := cmp.requests[2].(*waymarkv1.CompareRunsRequest)
	if req.GetNamespace() != "agents" || req.GetRunIdA() != "run-a" || req.GetRunIdB() != "run-b" {
		t.Fatalf("compare sent %v", req)
	}
	if len(res.GetEffects()) != 1 || res.GetEffects()[0].GetDifference() != waymarkv1.EffectDifference_EFFECT_DIFFERENCE_CHANGED || res.GetB().GetId() != "run-b" {
		t.Fatalf("compare answered %v", res)
	}
}

// INVALID_FORK and RUNS_NOT_COMPARABLE are InvalidArgumentErrors with their violations, never retried.
func TestForkAndCompareRefusalsAreTypedAndFinal(t *testing.T) {
	refusal := func(reason, field string) error {
		st, _ := status.New(codes.InvalidArgument, "refused").WithDetails(
			&errdetails.ErrorInfo{Reason: reason, Domain: "waymark"},
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: "no"}}})
		return st.Err()
	}
	s := &forkServer{errorScript: errorScript{script: []error{refusal("INVALID_FORK", "at_seq"), refusal("RUNS_NOT_COMPARABLE", "run_id_b")}}}
	client := dialTest(t, serveForks(t, s))
	_, err := client.Fork(context.Background(), "run-1", 99, ForkOptions{})
	var invalid *InvalidArgumentError
	if !errors.As(err, &invalid) || invalid.Reason != "INVALID_FORK" || len(invalid.FieldViolations) != 1 || invalid.FieldViolations[0].Field != "at_seq" || s.calls() != 1 {
		t.Fatalf("fork: got %#v after %d attempts", err, s.calls())
	}
	_, err = client.CompareRuns(context.Background(), "run-a", "run-b")
	if !errors.As(err, &invalid) || invalid.Reason != "RUNS_NOT_COMPARABLE" || s.calls() != 2 {
		t.Fatalf("compare: got %#v after %d attempts", err, s.calls())
	}
}

// Through the raw stub a ForkRun with neither a key nor dry_run is sent once: a repeat would fork twice.
func TestForkRunIsRepeatableOnlyWithAKeyOrAsADryRun(t *testing.T) {
	for _, c := range []struct {
		req  *waymarkv1.ForkRunRequest
		want bool
	}{
		{&waymarkv1.ForkRunRequest{RunId: "r"}, false},
		{&waymarkv1.ForkRunRequest{RunId: "r", IdempotencyKey: "k"}, true},
		{&waymarkv1.ForkRunRequest{RunId: "r", DryRun: true}, true},
	} {
		if got := repeatable("/waymark.v1.RunService/ForkRun", c.req); got != c.want {
			t.Errorf("repeatable(ForkRun %v) = %v, want %v", c.req, got, c.want)
		}
	}
	if !repeatable("/waymark.v1.RunService/CompareRuns", &waymarkv1.CompareRunsRequest{}) {
		t.Error("CompareRuns is a read")
	}
}
