package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/waymark"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// fakeServer is a scripted WorkerService: it hands out the tasks a test queues, answers polls and
// heartbeats with the errors a test scripts, and records every request, so a test sees what the
// worker sent over a real gRPC connection.
type fakeServer struct {
	waymarkv1.UnimplementedWorkerServiceServer
	tasks chan *waymarkv1.RemoteTask

	mu            sync.Mutex
	registrations []*waymarkv1.RegisterWorkerRequest
	polls         int
	pollErrors    []error // answered to the next polls, in order
	heartbeats    []*waymarkv1.HeartbeatRequest
	loseAfter     int // answer ABORTED task_lost to this heartbeat (1-based); 0: never
	completions   chan *waymarkv1.CompleteTaskRequest
	beat          chan struct{}
}

func newFake() *fakeServer {
	return &fakeServer{tasks: make(chan *waymarkv1.RemoteTask, 8), completions: make(chan *waymarkv1.CompleteTaskRequest, 8), beat: make(chan struct{}, 64)}
}

func (s *fakeServer) RegisterWorker(_ context.Context, req *waymarkv1.RegisterWorkerRequest) (*waymarkv1.RegisterWorkerResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registrations = append(s.registrations, req)
	return &waymarkv1.RegisterWorkerResponse{WorkerId: req.GetWorkerId()}, nil
}

func (s *fakeServer) PollTask(ctx context.Context, req *waymarkv1.PollTaskRequest) (*waymarkv1.PollTaskResponse, error) {
	s.mu.Lock()
	s.polls++
	if len(s.pollErrors) > 0 {
		err := s.pollErrors[0]
		s.pollErrors = s.pollErrors[1:]
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Unlock()
	select {
	case task := <-s.tasks:
		return &waymarkv1.PollTaskResponse{Task: task}, nil
	case <-time.After(req.GetWait().AsDuration()):
		return &waymarkv1.PollTaskResponse{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *fakeServer) Heartbeat(_ context.Context, req *waymarkv1.HeartbeatRequest) (*waymarkv1.HeartbeatResponse, error) {
	s.mu.Lock()
	s.heartbeats = append(s.heartbeats, req)
	lost := s.loseAfter > 0 && len(s.heartbeats) >= s.loseAfter
	s.mu.Unlock()
	s.beat <- struct{}{}
	if lost {
		st, _ := status.New(codes.Aborted, "the task was dispatched to another worker").WithDetails(&errdetails.ErrorInfo{Reason: "TASK_LOST", Domain: "waymark"})
		return nil, st.Err()
	}
	return &waymarkv1.HeartbeatResponse{}, nil
}

func (s *fakeServer) CompleteTask(_ context.Context, req *waymarkv1.CompleteTaskRequest) (*waymarkv1.CompleteTaskResponse, error) {
	s.completions <- req
	return &waymarkv1.CompleteTaskResponse{Applied: true}, nil
}

func (s *fakeServer) registered() []*waymarkv1.RegisterWorkerRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*waymarkv1.RegisterWorkerRequest(nil), s.registrations...)
}

// serve starts s on a free port; with s nil, a gRPC server that serves no WorkerService.
func serve(t *testing.T, s *fakeServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	if s != nil {
		waymarkv1.RegisterWorkerServiceServer(srv, s)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newWorker(t *testing.T, addr string, opts Options) *Worker {
	t.Helper()
	client, err := waymark.Dial(addr, waymark.WithNamespace("payments"), waymark.WithRetry(waymark.RetryPolicy{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Budget: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if opts.PollWait == 0 {
		opts.PollWait = 50 * time.Millisecond
	}
	opts.Backoff = waymark.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, GiveUpAfter: opts.Backoff.GiveUpAfter}
	return New(client, opts)
}

// run starts w.Run and returns a stop function that cancels it and returns Run's error.
func run(t *testing.T, w *Worker) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = errors.New("Run did not return within 30 s of its context's cancellation")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func task(id, tool string, input any) *waymarkv1.RemoteTask {
	v, err := waymark.ToValue(input)
	if err != nil {
		panic(err)
	}
	return &waymarkv1.RemoteTask{
		TaskId: id, RunId: "run-1", Tool: tool, Input: v, IdempotencyKey: "key-" + id, Attempt: 1,
		FencingToken: 7, Deadline: timestamppb.New(time.Now().Add(time.Minute)), HeartbeatTimeout: durationpb.New(30 * time.Second),
		Namespace: "payments", Traceparent: "00-0192f3a45b6c7d8e9f0123456789abcd-00f067aa0ba902b7-01",
	}
}

func completion(t *testing.T, s *fakeServer) *waymarkv1.CompleteTaskRequest {
	t.Helper()
	select {
	case c := <-s.completions:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("no CompleteTask within 30 s")
		return nil
	}
}

type ChargeIn struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
}

type ChargeOut struct {
	RefundID string `json:"refundId"`
}

// The declaration carries what Register was given (schemas derived from the Go types, mutating,
// policy, limits, the worker's queue), and a task's input reaches the tool decoded, with its
// idempotency key and task in the context; the output goes back with the task's fencing token.
func TestRegistersDeclaresAndServes(t *testing.T) {
	s := newFake()
	w := newWorker(t, serve(t, s), Options{ID: "w-1", Queue: "payments-eu", Concurrency: 1})
	var seen Task
	Register(w, "charge_back", func(ctx context.Context, in ChargeIn) (ChargeOut, error) {
		seen, _ = TaskFrom(ctx)
		return ChargeOut{RefundID: "rf_" + IdempotencyKey(ctx) + "_" + in.Order}, nil
	}, Description("Refunds an order"), Policy(waymarkv1.ToolPolicy_TOOL_POLICY_ASK), Timeout(time.Minute), HeartbeatTimeout(9*time.Second), MaxAttempts(5))
	Register(w, "lookup", func(_ context.Context, order string) (map[string]any, error) {
		return map[string]any{"order": order}, nil
	},
		ReadOnly(), InputSchema(map[string]any{"type": "string", "minLength": 1}))
	stop := run(t, w)

	s.tasks <- task("t-1", "charge_back", map[string]any{"order": "A-1", "amount": 42.5})
	c := completion(t, s)
	if got := c.GetOutput().GetStructValue().AsMap(); got["refundId"] != "rf_key-t-1_A-1" {
		t.Fatalf("output %v", got)
	}
	if c.GetTaskId() != "t-1" || c.GetFencingToken() != 7 || c.GetWorkerId() != "w-1" || c.GetNamespace() != "payments" {
		t.Fatalf("completion %v", c)
	}
	if seen.RunID != "run-1" || seen.Attempt != 1 || seen.IdempotencyKey != "key-t-1" || seen.Deadline.IsZero() ||
		seen.Traceparent != "00-0192f3a45b6c7d8e9f0123456789abcd-00f067aa0ba902b7-01" {
		t.Fatalf("task in the context: %+v", seen)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	regs := s.registered()
	if len(regs) != 1 || regs[0].GetWorkerId() != "w-1" || regs[0].GetNamespace() != "payments" || len(regs[0].GetTools()) != 2 {
		t.Fatalf("registrations %v", regs)
	}
	charge, lookup := regs[0].GetTools()[0], regs[0].GetTools()[1]
	if charge.GetName() != "charge_back" || charge.GetDescription() != "Refunds an order" || charge.Mutating != nil ||
		charge.GetPolicy() != waymarkv1.ToolPolicy_TOOL_POLICY_ASK || charge.GetTimeout().AsDuration() != time.Minute ||
		charge.GetHeartbeatTimeout().AsDuration() != 9*time.Second || charge.GetMaxAttempts() != 5 || charge.GetQueue() != "payments-eu" {
		t.Fatalf("charge_back declared as %v", charge)
	}
	in := charge.GetInputSchema().GetStructValue().AsMap()
	if in["type"] != "object" || fmt.Sprint(in["required"]) != "[order amount]" {
		t.Fatalf("charge_back's input schema %v", in)
	}
	if out := charge.GetOutputSchema().GetStructValue().AsMap(); fmt.Sprint(out["required"]) != "[refundId]" {
		t.Fatalf("charge_back's output schema %v", out)
	}
	if lookup.Mutating == nil || lookup.GetMutating() || lookup.GetInputSchema().GetStructValue().AsMap()["minLength"] != 1.0 {
		t.Fatalf("lookup declared as %v", lookup)
	}
}

type cardDeclined struct{ code string }

func (e *cardDeclined) Error() string { return "card declined: " + e.code }

// A NonRetryable error is reported as non-retryable, anything else as retryable; the failure is
// named after the error's type (Named overrides it), and RetryAfter sends the least wait.
func TestFailuresCarryRetryability(t *testing.T) {
	s := newFake()
	w := newWorker(t, serve(t, s), Options{Concurrency: 1})
	Register(w, "charge_back", func(_ context.Context, in ChargeIn) (ChargeOut, error) {
		switch in.Order {
		case "declined":
			return ChargeOut{}, NonRetryable(fmt.Errorf("charging: %w", &cardDeclined{code: "insufficient_funds"}))
		case "limited":
			return ChargeOut{}, RetryAfter(Named("RateLimited", errors.New("slow down")), 3*time.Second)
		case "panics":
			panic("boom")
		}
		return ChargeOut{}, errors.New("provider timed out")
	})
	run(t, w)

	cases := []struct {
		order, name, message string
		nonRetryable         bool
		retryAfter           time.Duration
	}{
		{"declined", "cardDeclined", "charging: card declined: insufficient_funds", true, 0},
		{"flaky", "Error", "provider timed out", false, 0},
		{"limited", "RateLimited", "slow down", false, 3 * time.Second},
		{"panics", "Panic", "worker: tool charge_back panicked: boom", false, 0},
	}
	for i, c := range cases {
		s.tasks <- task(fmt.Sprint("t-", i), "charge_back", map[string]any{"order": c.order, "amount": 1})
		f := completion(t, s).GetFailure()
		if f.GetName() != c.name || f.GetMessage() != c.message || f.GetNonRetryable() != c.nonRetryable || f.GetRetryAfter().AsDuration() != c.retryAfter {
			t.Errorf("%s: failure %v", c.order, f)
		}
	}
	// An input that does not decode into the tool's type cannot succeed on a retry either.
	s.tasks <- task("t-bad", "charge_back", map[string]any{"order": 12})
	if f := completion(t, s).GetFailure(); f.GetName() != "InvalidInput" || !f.GetNonRetryable() {
		t.Errorf("undecodable input: %v", f)
	}
}

// While a tool runs it is heartbeated; when the server answers a heartbeat with task_lost the
// tool's context is cancelled with ErrTaskLost and its result is not returned. A task whose
// deadline passes is cancelled with context.DeadlineExceeded and not reported either.
func TestLostOrTimedOutTaskCancelsTheToolAndReportsNothing(t *testing.T) {
	s := newFake()
	s.loseAfter = 2
	w := newWorker(t, serve(t, s), Options{Concurrency: 1})
	causes := make(chan error, 2)
	Register(w, "charge_back", func(ctx context.Context, in ChargeIn) (ChargeOut, error) {
		if in.Order == "ok" {
			return ChargeOut{RefundID: "rf-ok"}, nil
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		if in.Order == "lost" {
			return ChargeOut{RefundID: "late"}, nil // a result after the loss: must be dropped
		}
		return ChargeOut{}, ctx.Err()
	})
	run(t, w)
	lost := task("t-lost", "charge_back", map[string]any{"order": "lost", "amount": 1})
	lost.HeartbeatTimeout = durationpb.New(30 * time.Millisecond)
	expired := task("t-expired", "charge_back", map[string]any{"order": "expired", "amount": 1})
	expired.Deadline = timestamppb.New(time.Now().Add(-time.Second))
	s.tasks <- lost
	s.tasks <- expired
	s.tasks <- task("t-ok", "charge_back", map[string]any{"order": "ok", "amount": 1})
	for _, want := range []error{ErrTaskLost, context.DeadlineExceeded} {
		select {
		case cause := <-causes:
			if !errors.Is(cause, want) {
				t.Fatalf("cause %v, want %v", cause, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the tool's context was not cancelled with %v", want)
		}
	}
	// One slot runs the three in order: the first completion is the third task's, so neither
	// the lost nor the expired one was reported.
	if c := completion(t, s); c.GetTaskId() != "t-ok" {
		t.Fatalf("first completion %v", c)
	}
	s.mu.Lock()
	beats := len(s.heartbeats)
	s.mu.Unlock()
	if beats < 2 {
		t.Fatalf("%d heartbeats before the loss", beats)
	}
}

// Polls refused while the server restarts (UNAVAILABLE) are retried with backoff; a poll
// answered NOT_FOUND (the server forgot the worker) registers the tools again.
func TestReconnectsAndRegistersAgain(t *testing.T) {
	s := newFake()
	s.pollErrors = []error{
		status.Error(codes.Unavailable, "restarting"), status.Error(codes.Unavailable, "restarting"),
		status.Error(codes.NotFound, "unknown worker"),
	}
	w := newWorker(t, serve(t, s), Options{Concurrency: 1})
	Register(w, "charge_back", func(context.Context, ChargeIn) (ChargeOut, error) { return ChargeOut{RefundID: "rf"}, nil })
	run(t, w)
	s.tasks <- task("t-1", "charge_back", map[string]any{"order": "A", "amount": 1})
	if c := completion(t, s); c.GetTaskId() != "t-1" {
		t.Fatalf("completion %v", c)
	}
	if n := len(s.registered()); n != 2 {
		t.Fatalf("%d registrations, want 2 (the first, then after NOT_FOUND)", n)
	}
}

// A server that refuses the registration for good ends Run with the error: here one that does
// not serve WorkerService at all.
func TestRunFailsOnAPermanentRefusal(t *testing.T) {
	w := newWorker(t, serve(t, nil), Options{})
	Register(w, "charge_back", func(context.Context, ChargeIn) (ChargeOut, error) { return ChargeOut{}, nil })
	err := w.Run(context.Background())
	var apiErr *waymark.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != codes.Unimplemented {
		t.Fatalf("Run: %v", err)
	}
	if err := New(w.client, Options{}).Run(context.Background()); err == nil {
		t.Fatal("Run without tools must fail")
	}
}

// Cancelling Run's context stops polling but lets the task in progress finish and report
// (graceful stop); a task that outlasts ShutdownGrace is cancelled with ErrShutdown and not
// reported (its claim lapses and another worker takes it).
func TestGracefulStop(t *testing.T) {
	s := newFake()
	w := newWorker(t, serve(t, s), Options{Concurrency: 2, ShutdownGrace: 50 * time.Millisecond})
	started := make(chan string, 2)
	release := make(chan struct{})
	causes := make(chan error, 1)
	Register(w, "charge_back", func(ctx context.Context, in ChargeIn) (ChargeOut, error) {
		started <- in.Order
		if in.Order == "finishes" {
			<-release
			return ChargeOut{RefundID: "rf-finished"}, nil
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ChargeOut{}, ctx.Err()
	})
	stop := run(t, w)
	s.tasks <- task("t-finishes", "charge_back", map[string]any{"order": "finishes", "amount": 1})
	s.tasks <- task("t-stuck", "charge_back", map[string]any{"order": "stuck", "amount": 1})
	<-started
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	if cause := <-causes; !errors.Is(cause, ErrShutdown) {
		t.Fatalf("the stuck tool's cause: %v", cause)
	}
	close(release) // after the grace: a tool that finishes late still reports its result
	if c := completion(t, s); c.GetTaskId() != "t-finishes" || c.GetOutput() == nil {
		t.Fatalf("completion %v", c)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-s.completions:
		t.Fatalf("the task cancelled by the shutdown was reported: %v", c)
	default:
	}
}
