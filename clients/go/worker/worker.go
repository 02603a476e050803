// Package worker serves remote tools: Go functions that Waymark runs call durably
// (ctx.tool("charge_back", args) in a workflow, an agent's tools), over waymark.v1.WorkerService.
//
//	w := worker.New(client, worker.Options{})
//	worker.Register(w, "charge_back", chargeBack, worker.Description("Refunds an order"))
//	err := w.Run(ctx) // until ctx is cancelled
//
// Run registers the tools (name, description, JSON Schemas derived from the Go types, mutating,
// policy), long-polls for tasks, runs each in its own goroutine with a context that carries the
// task (IdempotencyKey, TaskFrom) and is cancelled when the task is lost to another worker, its
// deadline passes or the worker shuts down, heartbeats it while it runs, and returns its result
// or failure. A NonRetryable error fails the call at once; any other error is retried by the
// engine with the same idempotency key. Connection failures are retried with backoff for as long
// as Run runs. docs/workers.md describes the protocol and the guarantees.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"reflect"
	"sync"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/waymark"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// Why a tool's context was cancelled, as context.Cause reports it. A passed deadline is
// context.DeadlineExceeded.
var (
	// ErrTaskLost: the server dispatched the task to another worker (this one stopped
	// heartbeating in time) or closed it (its run was cancelled). Stop: the result would be
	// refused, and the new holder presents the same idempotency key downstream.
	ErrTaskLost = errors.New("worker: the task was lost (dispatched to another worker, or closed)")
	// ErrShutdown: the worker is stopping and the task did not finish within ShutdownGrace. Its
	// claim lapses and another worker takes it, with the same idempotency key.
	ErrShutdown = errors.New("worker: the worker is shutting down")
)

// Options configures a Worker. The zero value is usable.
type Options struct {
	// ID is the worker's id, kept across reconnects; default host:pid-<random>.
	ID string
	// Queue is the group of workers the tools are served by: tasks go only to workers of the
	// same queue. Empty: the default queue.
	Queue string
	// Concurrency is how many tasks run at once (each idle slot holds one long poll); default 4.
	Concurrency int
	// PollWait is how long one poll waits for a task (the server caps it at 30 s); default 20 s.
	PollWait time.Duration
	// TTL is how long the worker counts as live without a poll or heartbeat; default the
	// server's (60 s).
	TTL time.Duration
	// Backoff paces retries after a failed registration or poll (the server restarting, the
	// network down): the first wait up to Initial, each further one up to twice as long, capped
	// at Max (full jitter). GiveUpAfter 0 (the default) retries for as long as Run runs; more
	// makes Run return the last error once that long passed without a successful call.
	// Default 100 ms doubling to 5 s.
	Backoff waymark.Backoff
	// ShutdownGrace is how long tasks in progress may take to finish once Run's context is
	// cancelled, before their contexts are cancelled with ErrShutdown; default 10 s.
	ShutdownGrace time.Duration
	// Logger receives what the worker does (registered, task started, lost, refused); default
	// slog.Default().
	Logger *slog.Logger
}

// Worker serves the tools registered on it. Register every tool before Run.
type Worker struct {
	client *waymark.Client
	stub   waymarkv1.WorkerServiceClient
	opts   Options
	log    *slog.Logger

	mu    sync.Mutex
	tools map[string]*tool
	order []string
	id    string
}

type tool struct {
	decl *waymarkv1.ToolDeclaration
	call func(ctx context.Context, input *structpb.Value) (*structpb.Value, error)
}

// New returns a worker that serves its tools through client's connection, in client's
// namespace (waymark.WithNamespace) and with its credentials.
func New(client *waymark.Client, opts Options) *Worker {
	if opts.ID == "" {
		host, _ := os.Hostname()
		opts.ID = fmt.Sprintf("%s:%d-%04x", host, os.Getpid(), rand.N(1<<16))
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.PollWait <= 0 {
		opts.PollWait = 20 * time.Second
	}
	if opts.Backoff.Initial <= 0 {
		opts.Backoff.Initial = 100 * time.Millisecond
	}
	if opts.Backoff.Max <= 0 {
		opts.Backoff.Max = 5 * time.Second
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Worker{
		client: client, stub: client.Workers, opts: opts, log: log.With("worker", opts.ID),
		tools: map[string]*tool{}, id: opts.ID,
	}
}

// ID is the worker's id (the server's, once registered).
func (w *Worker) ID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.id
}

// ToolOption sets a field of a tool's declaration.
type ToolOption func(*waymarkv1.ToolDeclaration)

// Description is what the tool does; agents' models read it.
func Description(text string) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.Description = text }
}

// ReadOnly declares that the tool does not change the world: it runs in dry runs too. Tools
// are mutating by default (skipped in dry runs, answering {"__dryRun": true}).
func ReadOnly() ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { f := false; d.Mutating = &f }
}

// Policy says who may call the tool without asking: waymarkv1.ToolPolicy_TOOL_POLICY_ALLOW
// (default), _ASK (the run parks on an approval first) or _DENY.
func Policy(p waymarkv1.ToolPolicy) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.Policy = p }
}

// InputSchema replaces the JSON Schema derived from the input type (anything encoding/json
// marshals: a map, a json.RawMessage, a struct).
func InputSchema(schema any) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.InputSchema = mustValue("InputSchema", schema) }
}

// OutputSchema replaces the JSON Schema derived from the output type.
func OutputSchema(schema any) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.OutputSchema = mustValue("OutputSchema", schema) }
}

// Timeout bounds a call in all, from its journaling to its result, across redispatches and
// while no worker is connected; default the server's (10 minutes).
func Timeout(t time.Duration) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.Timeout = durationpb.New(t) }
}

// HeartbeatTimeout is how long a task may go without a heartbeat before the worker loses it;
// default the server's (30 s). The worker heartbeats every third of it while the tool runs.
func HeartbeatTimeout(t time.Duration) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.HeartbeatTimeout = durationpb.New(t) }
}

// MaxAttempts is how many dispatches a call gets when the tool returns retryable errors;
// default the server's (3).
func MaxAttempts(n uint32) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.MaxAttempts = n }
}

func mustValue(what string, schema any) *structpb.Value {
	v, err := waymark.ToValue(schema)
	if err != nil {
		panic(fmt.Sprintf("worker: %s: %v", what, err))
	}
	return v
}

// Register adds a tool to w: fn is called with the task's input decoded into In (as
// encoding/json decodes), and its Out is the call's result. The input and output JSON Schemas
// are derived from In and Out (SchemaOf) unless InputSchema or OutputSchema are given. It is a
// function, not a method, because Go methods cannot have type parameters. Register panics on an
// empty or repeated name, or after Run started: these are mistakes in the program.
func Register[In, Out any](w *Worker, name string, fn func(context.Context, In) (Out, error), opts ...ToolOption) {
	decl := &waymarkv1.ToolDeclaration{
		Name:         name,
		InputSchema:  mustValue("input schema", SchemaOf(reflect.TypeFor[In]())),
		OutputSchema: mustValue("output schema", SchemaOf(reflect.TypeFor[Out]())),
		Queue:        w.opts.Queue,
	}
	for _, opt := range opts {
		opt(decl)
	}
	call := func(ctx context.Context, input *structpb.Value) (*structpb.Value, error) {
		var in In
		if err := waymark.DecodeValue(input, &in); err != nil {
			return nil, Named("InvalidInput", NonRetryable(fmt.Errorf("worker: the input of %s does not decode into %T: %w", name, in, err)))
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		v, err := waymark.ToValue(out)
		if err != nil {
			return nil, Named("InvalidOutput", NonRetryable(err))
		}
		if v == nil {
			v = structpb.NewNullValue()
		}
		return v, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if name == "" {
		panic("worker: Register needs a tool name")
	}
	if _, dup := w.tools[name]; dup {
		panic("worker: tool " + name + " is registered twice")
	}
	w.tools[name] = &tool{decl: decl, call: call}
	w.order = append(w.order, name)
}

// Task is the remote tool call a tool's context carries.
type Task struct {
	ID        string
	RunID     string
	Tool      string
	Namespace string
	// IdempotencyKey is the same on every redispatch of the call: pass it to the downstream API.
	IdempotencyKey string
	// Attempt is 1 for the first dispatch, one more for each redispatch.
	Attempt uint32
	// Deadline is when the call times out; the tool's context has it as its deadline.
	Deadline time.Time
}

type taskKey struct{}

// TaskFrom returns the task a tool's context carries.
func TaskFrom(ctx context.Context) (Task, bool) {
	t, ok := ctx.Value(taskKey{}).(Task)
	return t, ok
}

// IdempotencyKey is the idempotency key of the task a tool's context carries ("" outside a
// tool): the same on every redispatch of the call, so a downstream API that dedups on it
// applies the call once however often it is delivered.
func IdempotencyKey(ctx context.Context) string {
	t, _ := TaskFrom(ctx)
	return t.IdempotencyKey
}

// Run registers the tools and serves tasks until ctx is cancelled, then stops polling, gives the
// tasks in progress ShutdownGrace to finish (their results are still returned), cancels the
// rest with ErrShutdown and returns nil. It returns an error at once when there are no tools
// or the server refuses the registration for good (invalid declaration, unauthenticated, no
// WorkerService), and, with Backoff.GiveUpAfter, when the server stayed unreachable that long.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	n := len(w.tools)
	w.mu.Unlock()
	if n == 0 {
		return errors.New("worker: no tools registered")
	}
	if err := w.register(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	serving, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	for range w.opts.Concurrency {
		wg.Go(func() {
			if err := w.slot(serving, ctx); err != nil {
				stop(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(serving); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// register declares the tools, retrying transient failures with backoff.
func (w *Worker) register(ctx context.Context) error {
	w.mu.Lock()
	req := &waymarkv1.RegisterWorkerRequest{Namespace: w.client.Namespace(), WorkerId: w.id}
	for _, name := range w.order {
		req.Tools = append(req.Tools, w.tools[name].decl)
	}
	if w.opts.TTL > 0 {
		req.WorkerTtl = durationpb.New(w.opts.TTL)
	}
	w.mu.Unlock()
	return w.retrying(ctx, "register", func() error {
		res, err := w.stub.RegisterWorker(ctx, req)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.id = res.GetWorkerId()
		w.mu.Unlock()
		w.log.Info("worker registered", "tools", w.order, "queue", w.opts.Queue)
		return nil
	})
}

// permanent reports whether err cannot go away by retrying the same call.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.AlreadyExists,
		codes.Unimplemented, codes.FailedPrecondition, codes.OutOfRange:
		return true
	}
	return false
}

// retrying calls fn until it succeeds, fails for good, ctx ends or GiveUpAfter passes.
func (w *Worker) retrying(ctx context.Context, what string, fn func() error) error {
	began := time.Now()
	ceiling := w.opts.Backoff.Initial
	for {
		err := fn()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if permanent(err) {
			return fmt.Errorf("worker: %s refused: %w", what, waymark.FromStatus(status.Convert(err)))
		}
		if g := w.opts.Backoff.GiveUpAfter; g > 0 && time.Since(began) > g {
			return fmt.Errorf("worker: %s failed for %s: %w", what, g, err)
		}
		wait := time.Duration(0)
		if ceiling > 0 {
			wait = rand.N(ceiling + 1)
		}
		w.log.Warn("worker call failed; retrying", "call", what, "err", err, "wait", wait)
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
		ceiling = min(ceiling*2, w.opts.Backoff.Max)
	}
}

// slot polls for a task and runs it, over and over, until serving ends. Tasks in progress
// outlive serving: they are bounded by shutdown (Run's own context) plus ShutdownGrace.
func (w *Worker) slot(serving, shutdown context.Context) error {
	for serving.Err() == nil {
		var task *waymarkv1.RemoteTask
		err := w.retrying(serving, "poll", func() error {
			pollCtx, cancel := context.WithTimeout(serving, w.opts.PollWait+10*time.Second)
			defer cancel()
			res, err := w.stub.PollTask(pollCtx, &waymarkv1.PollTaskRequest{
				Namespace: w.client.Namespace(), WorkerId: w.ID(), Queue: w.opts.Queue, Wait: durationpb.New(w.opts.PollWait),
			})
			if status.Code(err) == codes.NotFound {
				// The server forgot this worker (its registration expired): declare the tools again.
				w.log.Warn("the server does not know this worker; registering again")
				if err := w.register(serving); err != nil {
					return err
				}
				return nil
			}
			if err != nil {
				return err
			}
			task = res.GetTask()
			return nil
		})
		if serving.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if task != nil {
			w.serve(shutdown, task)
		}
	}
	return nil
}

// serve runs one task's tool with heartbeats, then returns its outcome.
func (w *Worker) serve(shutdown context.Context, rt *waymarkv1.RemoteTask) {
	w.mu.Lock()
	t := w.tools[rt.GetTool()]
	w.mu.Unlock()
	task := Task{
		ID: rt.GetTaskId(), RunID: rt.GetRunId(), Tool: rt.GetTool(), Namespace: rt.GetNamespace(),
		IdempotencyKey: rt.GetIdempotencyKey(), Attempt: rt.GetAttempt(),
	}
	if d := rt.GetDeadline(); d != nil {
		task.Deadline = d.AsTime()
	}
	log := w.log.With("task", task.ID, "tool", task.Tool, "attempt", task.Attempt)
	// The tool's context outlives Run's (a graceful stop lets it finish) and ends with the task.
	toolCtx, cancel := context.WithCancelCause(context.WithValue(context.WithoutCancel(shutdown), taskKey{}, task))
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
		case <-shutdown.Done():
			select {
			case <-finished:
			case <-time.After(w.opts.ShutdownGrace):
				cancel(ErrShutdown)
			}
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
	completeCtx, done := context.WithTimeout(context.WithoutCancel(shutdown), time.Minute)
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

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
