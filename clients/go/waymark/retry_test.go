package waymark

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// failingServer answers each unary call with the next error of its script (nil: success) and
// records the requests, so a test sees how often the client tried and with what.
type failingServer struct {
	waymarkv1.UnimplementedRunServiceServer
	waymarkv1.UnimplementedSignalServiceServer
	errorScript
	health *health.Server
}

func (s *failingServer) GetRun(_ context.Context, req *waymarkv1.GetRunRequest) (*waymarkv1.GetRunResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.GetRunResponse{Run: &waymarkv1.Run{Id: req.GetRunId()}}, nil
}

func (s *failingServer) StartRun(_ context.Context, req *waymarkv1.StartRunRequest) (*waymarkv1.StartRunResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.StartRunResponse{Run: &waymarkv1.Run{Id: "run-1"}, Created: true}, nil
}

func (s *failingServer) ResumeRun(_ context.Context, req *waymarkv1.ResumeRunRequest) (*waymarkv1.ResumeRunResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.ResumeRunResponse{Run: &waymarkv1.Run{Id: req.GetRunId()}, Preview: &waymarkv1.ResumePreview{}}, nil
}

func (s *failingServer) DecideApproval(_ context.Context, req *waymarkv1.DecideApprovalRequest) (*waymarkv1.DecideApprovalResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.DecideApprovalResponse{Applied: true}, nil
}

func serveFailing(t *testing.T, s *failingServer) string {
	return serveGRPC(t, func(srv *grpc.Server) {
		waymarkv1.RegisterRunServiceServer(srv, s)
		waymarkv1.RegisterSignalServiceServer(srv, s)
		s.health = health.NewServer()
		healthpb.RegisterHealthServer(srv, s.health)
	})
}

var fastRetry = RetryPolicy{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Budget: 20 * time.Second}

func retryInfo(code codes.Code, delay time.Duration) error {
	st, _ := status.New(code, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	return st.Err()
}

func dialTest(t *testing.T, addr string, opts ...Option) *Client {
	t.Helper()
	client, err := Dial(addr, append([]Option{WithRetry(fastRetry)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// UNAVAILABLE is retried until the call succeeds; RESOURCE_EXHAUSTED only with RetryInfo, and
// then after at least the delay the server asked for.
func TestRetryOnUnavailableAndRetryInfo(t *testing.T) {
	s := &failingServer{errorScript: errorScript{script: []error{
		status.Error(codes.Unavailable, "restarting"),
		retryInfo(codes.ResourceExhausted, 200*time.Millisecond),
		status.Error(codes.Unavailable, "restarting"),
	}}}
	client := dialTest(t, serveFailing(t, s))
	began := time.Now()
	res, err := client.GetRun(context.Background(), "run-7")
	if err != nil || res.GetRun().GetId() != "run-7" {
		t.Fatalf("GetRun after retries: %v %v", res, err)
	}
	if s.calls() != 4 {
		t.Fatalf("%d attempts, want 4", s.calls())
	}
	if time.Since(began) < 200*time.Millisecond {
		t.Fatal("retried before the delay of the server's RetryInfo")
	}
}

// Final codes are not retried: one attempt each, and the typed error comes back.
func TestNoRetryOnFinalCodes(t *testing.T) {
	for _, code := range []codes.Code{
		codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.AlreadyExists, codes.PermissionDenied,
		codes.Unauthenticated, codes.DeadlineExceeded, codes.Internal, codes.ResourceExhausted,
	} {
		s := &failingServer{errorScript: errorScript{script: []error{status.Error(code, "no")}}}
		client := dialTest(t, serveFailing(t, s))
		_, err := client.GetRun(context.Background(), "run-1")
		if status.Code(err) != code || s.calls() != 1 {
			t.Fatalf("%s: got %v after %d attempts, want one attempt", code, err, s.calls())
		}
	}
}

// StartRun retries with one idempotency key, made up by the client when the caller gave none;
// a raw StartRun without a key, a resume with invalidate or RESTART and a decision without
// request id are not repeated (the server would start, unpin or decide twice); a plain resume, a
// dry-run resume and a decision with its request id are.
func TestRetryOnlyWhatIsSafeToRepeat(t *testing.T) {
	unavailable := func(n int) []error {
		var out []error
		for range n {
			out = append(out, status.Error(codes.Unavailable, "restarting"))
		}
		return out
	}
	ctx := context.Background()

	s := &failingServer{errorScript: errorScript{script: unavailable(2)}}
	client := dialTest(t, serveFailing(t, s))
	started, err := client.StartRun(ctx, "refund", map[string]any{}, StartOptions{})
	if err != nil || !started.GetCreated() {
		t.Fatal(started, err)
	}
	key := s.requests[0].(*waymarkv1.StartRunRequest).GetIdempotencyKey()
	if s.calls() != 3 || !strings.HasPrefix(key, "client:") || s.requests[2].(*waymarkv1.StartRunRequest).GetIdempotencyKey() != key {
		t.Fatalf("want 3 attempts with one generated key, got %d (%q)", s.calls(), key)
	}

	once := func(call func(c *Client) error) {
		t.Helper()
		s := &failingServer{errorScript: errorScript{script: unavailable(1)}}
		c := dialTest(t, serveFailing(t, s))
		var u *UnavailableError
		if err := call(c); !errors.As(err, &u) || s.calls() != 1 {
			t.Fatalf("want one attempt ending *UnavailableError, got %v after %d", err, s.calls())
		}
	}
	once(func(c *Client) error {
		_, err := c.Runs.StartRun(ctx, &waymarkv1.StartRunRequest{Workflow: "refund"})
		return mapError(err)
	})
	once(func(c *Client) error {
		_, err := c.Resume(ctx, "run-1", ResumeOptions{Invalidate: []int64{3}})
		return err
	})
	once(func(c *Client) error {
		_, err := c.Resume(ctx, "run-1", ResumeOptions{DriftRecovery: waymarkv1.DriftRecovery_DRIFT_RECOVERY_RESTART})
		return err
	})
	once(func(c *Client) error {
		_, err := c.Signals.DecideApproval(ctx, &waymarkv1.DecideApprovalRequest{Id: "a:1", Approve: true, By: "x"})
		return mapError(err)
	})

	// A plain resume is retried; a retry answered WRONG_STATE (the run is executing: an earlier
	// attempt was applied) returns the run as GetRun reads it.
	wrongState, _ := status.New(codes.FailedPrecondition, "executing").WithDetails(&errdetails.ErrorInfo{Reason: ReasonWrongState, Domain: "waymark"})
	s = &failingServer{errorScript: errorScript{script: []error{status.Error(codes.Unavailable, "restarting"), wrongState.Err()}}}
	client = dialTest(t, serveFailing(t, s))
	if res, err := client.Resume(ctx, "run-9", ResumeOptions{}); err != nil || res.GetRun().GetId() != "run-9" || s.calls() != 3 {
		t.Fatalf("Resume: %v %v after %d calls, want the run from GetRun after 2 attempts", res, err, s.calls())
	}
	if _, ok := s.requests[2].(*waymarkv1.GetRunRequest); !ok {
		t.Fatalf("third call %T, want GetRun", s.requests[2])
	}

	s = &failingServer{errorScript: errorScript{script: unavailable(2)}}
	client = dialTest(t, serveFailing(t, s))
	if _, err := client.PreviewResume(ctx, "run-1"); err != nil || s.calls() != 3 {
		t.Fatalf("PreviewResume: %v after %d attempts, want success after 3", err, s.calls())
	}
	s = &failingServer{errorScript: errorScript{script: unavailable(2)}}
	client = dialTest(t, serveFailing(t, s))
	if _, err := client.Approve(ctx, "a:1", Decision{By: "x"}); err != nil || s.calls() != 3 {
		t.Fatalf("Approve: %v after %d attempts, want success after 3", err, s.calls())
	}
}

// The budget and the caller's deadline end the retries with the last error, typed.
func TestRetryBudgetAndDeadline(t *testing.T) {
	forever := &failingServer{}
	for range 10_000 {
		forever.script = append(forever.script, status.Error(codes.Unavailable, "down"))
	}
	addr := serveFailing(t, forever)
	client := dialTest(t, addr, WithRetry(RetryPolicy{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Budget: 300 * time.Millisecond}))
	_, err := client.GetRun(context.Background(), "run-1")
	var u *UnavailableError
	if !errors.As(err, &u) || forever.calls() < 2 {
		t.Fatalf("want *UnavailableError after several attempts, got %v after %d", err, forever.calls())
	}

	patient := dialTest(t, addr, WithRetry(RetryPolicy{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Budget: time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// Ended by the deadline: the last error when the next wait would pass it, DEADLINE_EXCEEDED
	// when it passes during an attempt.
	if _, err := patient.GetRun(ctx, "run-1"); !errors.As(err, &u) && status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a deadline must end the retries, got %v", err)
	}

	off := dialTest(t, addr, WithRetry(RetryPolicy{}))
	before := forever.calls()
	if _, err := off.GetRun(context.Background(), "run-1"); !errors.As(err, &u) || forever.calls() != before+1 {
		t.Fatalf("a zero budget makes one attempt, got %v after %d", err, forever.calls()-before)
	}
}

// A call that is sent once waits for a connection first; when none comes within the budget it
// fails with *UnavailableError saying the request was not sent.
func TestSentOnceWaitsForAConnection(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	_ = lis.Close()
	client := dialTest(t, dead, WithRetry(RetryPolicy{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Budget: 300 * time.Millisecond}))
	_, err = client.Resume(context.Background(), "run-1", ResumeOptions{Invalidate: []int64{2}})
	var u *UnavailableError
	if !errors.As(err, &u) || !u.NotSent {
		t.Fatalf("want *UnavailableError with NotSent, got %#v", err)
	}
}

// WithFailFast: Dial fails on a server nobody listens on and on one not serving, and connects to
// one that is up.
func TestDialFailFast(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	_ = lis.Close()
	_, err = Dial(dead, WithFailFast(500*time.Millisecond))
	var u *UnavailableError
	if !errors.As(err, &u) {
		t.Fatalf("want *UnavailableError from Dial, got %v", err)
	}
	up := &failingServer{}
	addr := serveFailing(t, up)
	client, err := Dial(addr, WithFailFast(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = client.Close()
	up.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if _, err := Dial(addr, WithFailFast(10*time.Second)); !errors.As(err, &u) {
		t.Fatalf("want *UnavailableError from a server not serving, got %v", err)
	}
}

// WorkerService: the worker's calls the fence or the declaration make safe to repeat are
// retried; a poll is not (its lost answer claimed a task).
func TestRepeatableWorkerCalls(t *testing.T) {
	for method, want := range map[string]bool{
		"/waymark.v1.WorkerService/RegisterWorker": true,
		"/waymark.v1.WorkerService/Heartbeat":      true,
		"/waymark.v1.WorkerService/CompleteTask":   true,
		"/waymark.v1.WorkerService/ListTools":      true,
		"/waymark.v1.WorkerService/PollTask":       false,
	} {
		if got := repeatable(method, nil); got != want {
			t.Errorf("repeatable(%s) = %v, want %v", method, got, want)
		}
	}
}
