package worker

// Serving one task: the tool's context (lost, deadline, shutdown), its heartbeats, its result.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// lateResultTimeout bounds the delivery of a result that came after the shutdown grace.
const lateResultTimeout = 2 * time.Second

// serve runs one task's tool with heartbeats, then returns its outcome. graceOver ends
// ShutdownGrace after the worker was told to stop: the tool is cancelled then (ErrShutdown) and a
// result not delivered by then is given up (the claim lapses; the task is dispatched again).
func (w *Worker) serve(graceOver context.Context, rt *waymarkv1.RemoteTask) {
	w.mu.Lock()
	t := w.tools[rt.GetTool()]
	w.mu.Unlock()
	task := Task{
		ID: rt.GetTaskId(), RunID: rt.GetRunId(), Tool: rt.GetTool(), Namespace: rt.GetNamespace(),
		IdempotencyKey: rt.GetIdempotencyKey(), Attempt: rt.GetAttempt(), Traceparent: rt.GetTraceparent(),
	}
	if d := rt.GetDeadline(); d != nil {
		task.Deadline = d.AsTime()
	}
	log := w.log.With("task", task.ID, "tool", task.Tool, "attempt", task.Attempt)
	// The tool's context outlives Run's (a graceful stop lets it finish) and ends with the task.
	toolCtx, cancel := context.WithCancelCause(context.WithValue(context.WithoutCancel(graceOver), taskKey{}, task))
	defer cancel(nil)
	if !task.Deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		toolCtx, cancelDeadline = context.WithDeadline(toolCtx, task.Deadline)
		defer cancelDeadline()
	}
	finished := make(chan struct{})
	var lost sync.Once
	lose := func() { lost.Do(func() { cancel(ErrTaskLost) }) }
	var beats sync.WaitGroup
	beats.Go(func() { w.heartbeat(toolCtx, finished, rt, lose, log) })
	beats.Go(func() {
		select {
		case <-finished:
		case <-graceOver.Done():
			cancel(ErrShutdown)
		}
	})

	log.Info("task started")
	var (
		out *structpb.Value
		err error
	)
	if t == nil {
		err = Named("ToolNotServed", fmt.Errorf("worker: this worker does not serve %s", rt.GetTool()))
	} else {
		out, err = call(toolCtx, t, rt.GetInput())
	}
	close(finished)
	beats.Wait()

	cause := context.Cause(toolCtx)
	switch {
	case errors.Is(cause, ErrTaskLost):
		log.Warn("task lost while the tool ran; its result is dropped")
		return
	case err != nil && cause != nil && toolCtx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, cause)):
		// Stopped by the deadline or the shutdown: a failure would only say so. The claim lapses
		// (or the call times out) and the engine decides.
		log.Warn("task stopped before it finished; not reported", "cause", cause)
		return
	}
	req := &waymarkv1.CompleteTaskRequest{
		Namespace: w.client.Namespace(), WorkerId: w.ID(), TaskId: rt.GetTaskId(), FencingToken: rt.GetFencingToken(),
	}
	if err != nil {
		f := failure(err)
		req.Outcome = &waymarkv1.CompleteTaskRequest_Failure{Failure: f}
		log.Info("task failed", "err", err, "non_retryable", f.GetNonRetryable())
	} else {
		req.Outcome = &waymarkv1.CompleteTaskRequest_Output{Output: out}
	}
	// Before the grace ends the result is retried until it ends; a tool that ignored its
	// cancellation and returned later still gets a short last try (the test "TestGracefulStop").
	completeCtx, done := context.WithTimeout(graceOver, time.Minute)
	if graceOver.Err() != nil {
		done()
		completeCtx, done = context.WithTimeout(context.WithoutCancel(graceOver), lateResultTimeout)
	}
	defer done()
	res, cerr := w.stub.CompleteTask(completeCtx, req)
	switch {
	case status.Code(cerr) == codes.Aborted:
		log.Warn("result refused: the task was lost to another worker", "err", cerr)
	case cerr != nil:
		log.Error("result not delivered; the task will be dispatched again", "err", cerr)
	case !res.GetApplied():
		log.Info("result not applied: the call was closed already (timed out or cancelled)")
	default:
		log.Info("task completed", "will_retry", res.GetWillRetry())
	}
}

// call runs the tool, turning a panic into a retryable failure.
func call(ctx context.Context, t *tool, input *structpb.Value) (out *structpb.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, Named("Panic", fmt.Errorf("worker: tool %s panicked: %v", t.decl.GetName(), r))
		}
	}()
	return t.call(ctx, input)
}

// heartbeat keeps the task's claim every third of its heartbeat timeout until finished, and
// calls lose when the server answers that the task went to another worker.
func (w *Worker) heartbeat(ctx context.Context, finished <-chan struct{}, rt *waymarkv1.RemoteTask, lose func(), log *slog.Logger) {
	every := rt.GetHeartbeatTimeout().AsDuration() / 3
	if every <= 0 {
		every = 10 * time.Second
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-finished:
			return
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrTaskLost) {
				return
			}
			// Deadline or shutdown: keep the claim while the tool winds down.
			select {
			case <-finished:
				return
			case <-ticker.C:
			}
		case <-ticker.C:
		}
		beatCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), every)
		_, err := w.stub.Heartbeat(beatCtx, &waymarkv1.HeartbeatRequest{
			Namespace: w.client.Namespace(), WorkerId: w.ID(), TaskId: rt.GetTaskId(), FencingToken: rt.GetFencingToken(),
		})
		cancel()
		switch {
		case status.Code(err) == codes.Aborted:
			log.Warn("heartbeat refused: the task was lost", "err", err)
			lose()
			return
		case err != nil:
			log.Warn("heartbeat failed; retrying at the next interval", "err", err)
		}
	}
}
