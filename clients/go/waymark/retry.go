package waymark

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/internal/wait"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// RetryPolicy paces the retries of unary calls, as docs/clients.md sets them out for every
// Waymark client: the first retry waits up to Initial, each further one up to twice as long,
// capped at Max (full jitter: a random wait between zero and the cap), and a call stops retrying
// once Budget has passed since it started, or when the next wait would pass its context's
// deadline. A Budget of zero turns retries off.
type RetryPolicy struct {
	Initial time.Duration
	Max     time.Duration
	Budget  time.Duration
}

// DefaultRetryPolicy rides through a rolling restart of the server: 100 ms doubling to 5 s, for
// up to a minute per call.
var DefaultRetryPolicy = RetryPolicy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Budget: time.Minute}

// repeatable reports whether repeating req is safe, so a failed attempt may be retried; the table
// of docs/clients.md, which names the server behaviour each row relies on. Reads are; a start with
// an idempotency key, a signal with a signal id and a decision with a request id are (the server
// answers a repeat like the first call; StartRun, SendSignal and Approve/Deny always set one); so
// is ForkRun with an idempotency key (Fork always sets one) or as a dry run, and CompareRuns;
// CancelRun is (cancelling a cancelled run returns it unchanged), and PurgeRuns (a repeat deletes
// what still matches the same filter); so is RegisterFlow (the same
// content as the latest version again stores nothing and returns that version) and PutMcpServer (a
// repeat puts the same registration; RemoveMcpServer is not: a repeat answers NOT_FOUND). Of
// ScheduleService, the reads are, and UpdateSchedule, PauseSchedule and UnpauseSchedule (a repeat
// writes the same values again), BackfillSchedule (each scheduled time's run has the key
// schedule:<id>:<time>, so a time already started is not started again) and DeleteSchedule (a
// retried attempt answering SCHEDULE_NOT_FOUND is success); CreateSchedule is not (a repeat of an
// applied create answers SCHEDULE_EXISTS), nor TriggerSchedule (a repeat queues a second run).
// ResumeRun is as a dry run, a
// plain resume and DRIFT_RECOVERY_ABANDON. A resume with invalidate or DRIFT_RECOVERY_RESTART is
// not (a repeat unpins the entries again, or starts a second new run): it is sent once, after
// waiting for a connection. Of WorkerService, RegisterWorker is (it replaces the declaration),
// Heartbeat is (it extends the claim), CompleteTask is (the fencing token makes a repeat of an
// applied result answer applied = false, or ABORTED, and journal nothing) and ListTools is a
// read; PollTask is not (a poll whose answer was lost claimed a task that then waits for its
// claim to lapse): the worker's own loop polls again.
func repeatable(method string, req any) bool {
	switch method {
	case "/waymark.v1.RunService/GetRun", "/waymark.v1.RunService/ListRuns", "/waymark.v1.RunService/GetJournal",
		"/waymark.v1.RunService/ListWorkflows", "/waymark.v1.RunService/GetRunProvenance", "/waymark.v1.RunService/CompareRuns",
		"/waymark.v1.SignalService/ListApprovals", "/waymark.v1.SignalService/GetApproval",
		"/waymark.v1.RunService/CancelRun", "/waymark.v1.RunService/PurgeRuns",
		"/waymark.v1.WorkerService/ListTools", "/waymark.v1.WorkerService/RegisterWorker",
		"/waymark.v1.WorkerService/Heartbeat", "/waymark.v1.WorkerService/CompleteTask",
		"/waymark.v1.FlowService/GetFlow", "/waymark.v1.FlowService/ListFlows", "/waymark.v1.FlowService/RegisterFlow",
		"/waymark.v1.McpService/PutMcpServer", "/waymark.v1.McpService/ListMcpServers",
		"/waymark.v1.ScheduleService/GetSchedule", "/waymark.v1.ScheduleService/ListSchedules",
		"/waymark.v1.ScheduleService/UpdateSchedule", "/waymark.v1.ScheduleService/PauseSchedule",
		"/waymark.v1.ScheduleService/UnpauseSchedule", "/waymark.v1.ScheduleService/BackfillSchedule",
		"/waymark.v1.ScheduleService/DeleteSchedule":
		return true
	case "/waymark.v1.RunService/StartRun":
		r, ok := req.(*waymarkv1.StartRunRequest)
		return ok && r.GetIdempotencyKey() != ""
	case "/waymark.v1.RunService/ForkRun":
		r, ok := req.(*waymarkv1.ForkRunRequest)
		return ok && (r.GetDryRun() || r.GetIdempotencyKey() != "")
	case "/waymark.v1.SignalService/SendSignal":
		r, ok := req.(*waymarkv1.SendSignalRequest)
		return ok && r.GetSignalId() != ""
	case "/waymark.v1.SignalService/DecideApproval":
		r, ok := req.(*waymarkv1.DecideApprovalRequest)
		return ok && r.GetRequestId() != ""
	case "/waymark.v1.RunService/ResumeRun":
		r, ok := req.(*waymarkv1.ResumeRunRequest)
		return ok && (r.GetDryRun() || len(r.GetInvalidate()) == 0 && r.GetDriftRecovery() != waymarkv1.DriftRecovery_DRIFT_RECOVERY_RESTART)
	}
	return false
}

// retryAfter reports whether a failed attempt may succeed when repeated, and the least wait the
// server asked for. UNAVAILABLE (which is also how grpc-go reports a refused or dropped
// connection) is retried; RESOURCE_EXHAUSTED only when the server sent google.rpc.RetryInfo.
// Every other code is final: INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, ALREADY_EXISTS,
// PERMISSION_DENIED, UNAUTHENTICATED, DEADLINE_EXCEEDED, INTERNAL and the rest.
func retryAfter(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return 0, false
	}
	switch st.Code() {
	case codes.Unavailable:
		return serverDelay(st), true
	case codes.ResourceExhausted:
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.RetryInfo); ok {
				return info.GetRetryDelay().AsDuration(), true
			}
		}
	}
	return 0, false
}

func serverDelay(st *status.Status) time.Duration {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok {
			return info.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// unaryInterceptor gives each attempt the client's default deadline when the caller's context
// has none, and retries what repeatable and retryAfter allow. It is installed on the connection,
// so the generated stubs (Client.Runs, Client.Signals) retry the same way as the wrapper.
func (c *Client) unaryInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	attempt := func() error {
		callCtx, cancel := c.unary(ctx)
		defer cancel()
		return invoker(callCtx, method, req, reply, cc, opts...)
	}
	policy := c.retry
	if policy.Budget <= 0 || ctx.Value(noRetry{}) != nil {
		return attempt()
	}
	if !repeatable(method, req) {
		// Sent once, but not into a connection that is down: waiting for the connection first
		// repeats nothing (the request has not left), so a resume right after a restart works.
		if err := awaitConnection(ctx, cc, policy.Budget); err != nil {
			return err
		}
		return attempt()
	}
	started := time.Now()
	ceiling := policy.Initial
	for tries := 1; ; tries++ {
		err := attempt()
		if err == nil {
			return nil
		}
		if tries > 1 && method == "/waymark.v1.RunService/ResumeRun" && wrongState(err) {
			// A retried resume that finds the run executing: an earlier attempt was applied
			// (docs/clients.md). Answer with the run as it stands.
			return c.resumedRun(ctx, req.(*waymarkv1.ResumeRunRequest), reply.(*waymarkv1.ResumeRunResponse), cc, invoker, opts...)
		}
		if tries > 1 && method == "/waymark.v1.ScheduleService/DeleteSchedule" && scheduleNotFound(err) {
			return nil // an earlier attempt deleted it (docs/clients.md)
		}
		least, ok := retryAfter(err)
		if !ok || ctx.Err() != nil {
			return err
		}
		delay := max(fullJitter(ceiling), least)
		if time.Since(started)+delay > policy.Budget {
			return err
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= delay {
			return err // the caller's deadline comes first: report why the call failed, not the deadline
		}
		if !wait.Sleep(ctx, delay) {
			return err
		}
		ceiling = min(ceiling*2, policy.Max)
	}
}

// noRetry marks a context whose unary calls make one attempt (the reconnect probe of an event
// stream and the readiness check, which have their own backoff or none).
type noRetry struct{}

func wrongState(err error) bool {
	var ws *WrongStateError
	return errors.As(mapError(err), &ws)
}

func (c *Client) resumedRun(ctx context.Context, req *waymarkv1.ResumeRunRequest, reply *waymarkv1.ResumeRunResponse, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	got := &waymarkv1.GetRunResponse{}
	callCtx, cancel := c.unary(ctx)
	defer cancel()
	if err := invoker(callCtx, "/waymark.v1.RunService/GetRun", &waymarkv1.GetRunRequest{Namespace: req.GetNamespace(), RunId: req.GetRunId()}, got, cc, opts...); err != nil {
		return err
	}
	reply.Run = got.GetRun()
	return nil
}

// awaitConnection returns once cc has a READY connection, or an UNAVAILABLE status when none
// came within budget (or before ctx ended).
func awaitConnection(ctx context.Context, cc *grpc.ClientConn, budget time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	for {
		state := cc.GetState()
		switch state {
		case connectivity.Ready:
			return nil
		case connectivity.Idle:
			cc.Connect()
		case connectivity.Shutdown:
			return status.Error(codes.Canceled, "waymark: the client is closed")
		}
		if !cc.WaitForStateChange(ctx, state) {
			msg := fmt.Sprintf("no connection to the server (%s): the call was not sent", state)
			return &UnavailableError{NotSent: true, APIError: &APIError{
				Code: codes.Unavailable, Message: msg, Metadata: map[string]string{}, status: status.New(codes.Unavailable, msg),
			}}
		}
	}
}

// fullJitter is a random wait between zero and ceiling.
func fullJitter(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}
