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
	"sync"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/internal/wait"
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
	// graceOver ends ShutdownGrace after ctx: what still runs then (a tool, a result on its way to
	// a server that went away) is given up, so Run returns within the grace of its cancellation.
	graceOver, endGrace := context.WithCancel(context.WithoutCancel(ctx))
	defer endGrace()
	go func() {
		select {
		case <-ctx.Done():
			wait.Sleep(graceOver, w.opts.ShutdownGrace)
			endGrace()
		case <-graceOver.Done():
		}
	}()
	var wg sync.WaitGroup
	for range w.opts.Concurrency {
		wg.Go(func() {
			if err := w.slot(serving, graceOver); err != nil {
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
		delay := time.Duration(0)
		if ceiling > 0 {
			delay = rand.N(ceiling + 1)
		}
		w.log.Warn("worker call failed; retrying", "call", what, "err", err, "wait", delay)
		if !wait.Sleep(ctx, delay) {
			return ctx.Err()
		}
		ceiling = min(ceiling*2, w.opts.Backoff.Max)
	}
}

// slot polls for a task and runs it, over and over, until serving ends. Tasks in progress
// outlive serving: they are bounded by graceOver (Run's own context plus ShutdownGrace).
func (w *Worker) slot(serving, graceOver context.Context) error {
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
			w.serve(graceOver, task)
		}
	}
	return nil
}
