package waymark

import (
	"context"
	"fmt"
	"iter"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// StartOptions are the optional parts of StartRun.
type StartOptions struct {
	// IdempotencyKey makes the start idempotent in the namespace: a repeat returns the first
	// run, with Created false. Empty: the client makes one up for this call ("client:<uuid>",
	// visible as the run's idempotency_key), so its own retries never start a second run; pass
	// your own to make repeats of your call safe too.
	IdempotencyKey string
	// Wait executes the run on the server that received the call and answers once it ends or
	// parks for the first time, on anything (or the context's deadline passes). Without it (and
	// without WaitFor) the call answers at once.
	Wait bool
	// WaitFor waits until the run reaches this point (docs/api.md "Waiting for a run"):
	// WaitFor_WAIT_FOR_END (it ended), WaitFor_WAIT_FOR_OUTSIDE_INPUT (it ended, or waits on an
	// approval or a signal; timers, retry backoffs, remote tool calls and child runs are waited
	// through) or WaitFor_WAIT_FOR_FIRST_PARK (as Wait). With a context deadline the server answers
	// a little before it, with the run as it stands and WaitComplete false if it has not got there
	// (the run goes on); without one the client asks again with the same idempotency key each time
	// the server answers at an attempt's deadline, until the run gets there.
	WaitFor waymarkv1.WaitFor
	// Labels to attach to the run.
	Labels map[string]string
	// BudgetUSD caps model spending; nil means no cap.
	BudgetUSD *float64
	// DryRun starts a dry run: tools declared mutating are not executed.
	DryRun bool
	// Timeout is the run's own timeout: a run not finished this long after it was created fails
	// with error reason "run_timed_out" and its unfinished child runs are cancelled. It replaces
	// the workflow definition's timeout; zero means the definition's (if any). The server refuses
	// negative durations and ones over 3650 days. The call's own deadline is the context's.
	Timeout time.Duration
}

// runTimeout is the wire form of StartOptions.Timeout: unset when zero.
func runTimeout(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// StartRun starts a run of workflow with input (anything encoding/json marshals).
func (c *Client) StartRun(ctx context.Context, workflow string, input any, opts StartOptions) (*waymarkv1.StartRunResponse, error) {
	value, err := ToValue(input)
	if err != nil {
		return nil, err
	}
	generated := opts.IdempotencyKey == ""
	if generated {
		opts.IdempotencyKey = "client:" + newUUID()
	}
	waiting := opts.WaitFor != waymarkv1.WaitFor_WAIT_FOR_UNSPECIFIED
	req := &waymarkv1.StartRunRequest{
		Namespace:      c.namespace,
		Workflow:       workflow,
		Input:          value,
		IdempotencyKey: opts.IdempotencyKey,
		// With WaitFor, Wait too: a server older than wait_for then waits for the first park at least.
		Wait:      opts.Wait || waiting,
		WaitFor:   opts.WaitFor,
		BudgetUsd: opts.BudgetUSD,
		DryRun:    opts.DryRun,
		Labels:    opts.Labels,
		Timeout:   runTimeout(opts.Timeout),
	}
	asked := time.Now()
	res, err := c.Runs.StartRun(ctx, req)
	if err != nil {
		return nil, mapError(err)
	}
	if generated {
		// Nobody else holds the key: created = false can only be this call's own retry.
		res.Created = true
	}
	created := res.Created
	_, bounded := ctx.Deadline()
	// Without a context deadline each attempt has the client's timeout, and an answer at it
	// (WaitComplete false after most of it) is asked again. An answer that came early did not
	// wait (a server that knows no wait_for): no busy loop on it.
	for waiting && !bounded && c.timeout > 0 && !res.WaitComplete && time.Since(asked) >= c.timeout/2 {
		if err := ctx.Err(); err != nil {
			return nil, mapError(err)
		}
		asked = time.Now()
		if res, err = c.Runs.StartRun(ctx, req); err != nil {
			return nil, mapError(err)
		}
	}
	res.Created = created
	return res, nil
}

// GetRun returns a run and, when it is suspended, what it waits for.
func (c *Client) GetRun(ctx context.Context, runID string) (*waymarkv1.GetRunResponse, error) {
	res, err := c.Runs.GetRun(ctx, &waymarkv1.GetRunRequest{Namespace: c.namespace, RunId: runID})
	return res, mapError(err)
}

// RunFilter selects runs for ListRuns; the zero value lists every run, newest first.
type RunFilter struct {
	Statuses    []waymarkv1.RunStatus
	Workflow    string
	Labels      map[string]string
	ParentRunID string
	// PageSize is how many runs each call fetches (0: the server's default).
	PageSize int32
}

// ListRuns iterates over the runs matching filter, fetching pages as the loop advances. A
// failed call ends the iteration with its error.
func (c *Client) ListRuns(ctx context.Context, filter RunFilter) iter.Seq2[*waymarkv1.Run, error] {
	return pages(ctx, c, func(ctx context.Context, token string) ([]*waymarkv1.Run, string, error) {
		res, err := c.Runs.ListRuns(ctx, &waymarkv1.ListRunsRequest{
			Namespace:   c.namespace,
			Statuses:    filter.Statuses,
			Workflow:    filter.Workflow,
			Labels:      filter.Labels,
			ParentRunId: filter.ParentRunID,
			PageSize:    filter.PageSize,
			PageToken:   token,
		})
		return res.GetRuns(), res.GetNextPageToken(), err
	})
}

// JournalOptions select a part of a run's journal.
type JournalOptions struct {
	// AfterSeq returns entries with a greater seq; nil returns the journal from seq 0.
	AfterSeq *int64
	PageSize int32
	// IncludeLargePayloads returns payloads stored out of line (results over the server's inline
	// threshold, 64 KiB by default) in the entries; without it such an entry has PayloadRef
	// instead of Payload, and a page stays small (docs/journal.md "Large payloads").
	IncludeLargePayloads bool
}

// Journal iterates over a run's journal entries in seq order, up to the last entry written
// when the final page is fetched.
func (c *Client) Journal(ctx context.Context, runID string, opts JournalOptions) iter.Seq2[*waymarkv1.JournalEntry, error] {
	return pages(ctx, c, func(ctx context.Context, token string) ([]*waymarkv1.JournalEntry, string, error) {
		res, err := c.Runs.GetJournal(ctx, &waymarkv1.GetJournalRequest{
			Namespace: c.namespace,
			RunId:     runID,
			AfterSeq:  opts.AfterSeq,
			PageSize:  opts.PageSize,
			PageToken: token,
			// Pages with the payloads end near 4 MiB of them; the client accepts 16 MiB responses.
			IncludeLargePayloads: opts.IncludeLargePayloads,
		})
		return res.GetEntries(), res.GetNextPageToken(), err
	})
}

// ResumeOptions shape a resume.
type ResumeOptions struct {
	// Invalidate lists seqs of journal entries whose effects should run again.
	Invalidate []int64
	// DriftRecovery recovers a run whose workflow definition changed under a strict drift policy
	// (the choices of a *FlowDriftError): RESTART cancels it and starts a new run with the same
	// input, ABANDON cancels it. Unset: a drifted run fails with *FlowDriftError.
	DriftRecovery waymarkv1.DriftRecovery
}

// Resume makes a suspended or failed run execute again from its journal. With
// DriftRecovery RESTART the response's RestartedAs is the new run. A plain resume and ABANDON
// are retried like reads; one with Invalidate or RESTART is sent once (docs/clients.md).
func (c *Client) Resume(ctx context.Context, runID string, opts ResumeOptions) (*waymarkv1.ResumeRunResponse, error) {
	return c.resume(ctx, &waymarkv1.ResumeRunRequest{Namespace: c.namespace, RunId: runID, Invalidate: opts.Invalidate, DriftRecovery: opts.DriftRecovery})
}

// PreviewResume computes what Resume would do without executing or writing anything.
func (c *Client) PreviewResume(ctx context.Context, runID string, invalidate ...int64) (*waymarkv1.ResumePreview, error) {
	res, err := c.resume(ctx, &waymarkv1.ResumeRunRequest{Namespace: c.namespace, RunId: runID, DryRun: true, Invalidate: invalidate})
	return res.GetPreview(), err
}

func (c *Client) resume(ctx context.Context, req *waymarkv1.ResumeRunRequest) (*waymarkv1.ResumeRunResponse, error) {
	res, err := c.Runs.ResumeRun(ctx, req)
	return res, mapError(err)
}

// Cancel cancels a run; cancelling a finished run returns it unchanged.
func (c *Client) Cancel(ctx context.Context, runID, reason string) (*waymarkv1.Run, error) {
	res, err := c.Runs.CancelRun(ctx, &waymarkv1.CancelRunRequest{Namespace: c.namespace, RunId: runID, Reason: reason})
	return res.GetRun(), mapError(err)
}

// ListWorkflows returns the workflows registered with the server.
func (c *Client) ListWorkflows(ctx context.Context) ([]*waymarkv1.Workflow, error) {
	res, err := c.Runs.ListWorkflows(ctx, &waymarkv1.ListWorkflowsRequest{Namespace: c.namespace})
	return res.GetWorkflows(), mapError(err)
}

// Provenance returns a run's provenance: for each agent of the run, its answer and the model
// calls and tool results it drew on, and the same for each child run.
func (c *Client) Provenance(ctx context.Context, runID string) (*waymarkv1.RunProvenance, error) {
	res, err := c.Runs.GetRunProvenance(ctx, &waymarkv1.GetRunProvenanceRequest{Namespace: c.namespace, RunId: runID})
	return res.GetProvenance(), mapError(err)
}

// Result waits for a run to end, following its event stream (through reconnects, and while it is
// parked on an approval or a signal), and returns its output. A run that failed or was cancelled
// returns *RunFailedError (*RunCancelledError, which errors.As also finds as a *RunFailedError,
// for a cancelled one). ctx bounds the wait; a call error (*RunNotFoundError, a stream that
// gave up with *UnavailableError) is returned as is.
//
//	out, err := client.Result(ctx, runID)
//	var failed *waymark.RunFailedError
//	if errors.As(err, &failed) { log.Printf("%s: %s", failed.Status, failed.Err.GetMessage()) }
func (c *Client) Result(ctx context.Context, runID string) (*structpb.Value, error) {
	got, err := c.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	run := got.GetRun()
	if IsTerminal(run.GetStatus()) {
		return outcome(runID, run.GetStatus(), run.GetOutput(), run.GetError())
	}
	// Everything after what GetRun saw; the terminal event is among it.
	after := run.GetNextSeq() - 1
	for ev, err := range c.Events(ctx, runID, EventsOptions{AfterSeq: &after, FollowSuspended: true}) {
		if err != nil {
			return nil, err
		}
		if change := ev.GetStatusChanged(); change != nil && IsTerminal(change.GetStatus()) {
			return outcome(runID, change.GetStatus(), change.GetOutput(), change.GetError())
		}
	}
	// The server ends a follow_suspended stream only after the terminal event; read the run in
	// case that event came before the stream's start.
	got, err = c.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if run := got.GetRun(); IsTerminal(run.GetStatus()) {
		return outcome(runID, run.GetStatus(), run.GetOutput(), run.GetError())
	}
	return nil, fmt.Errorf("waymark: the event stream of run %s ended while the run is %s", runID, got.GetRun().GetStatus())
}

func outcome(runID string, s waymarkv1.RunStatus, output *structpb.Value, runErr *waymarkv1.RunError) (*structpb.Value, error) {
	if s == waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED {
		return output, nil
	}
	failed := &RunFailedError{RunID: runID, Status: s, Err: runErr}
	if s == waymarkv1.RunStatus_RUN_STATUS_CANCELLED {
		return nil, &RunCancelledError{RunFailedError: failed}
	}
	return nil, failed
}

// IsTerminal reports whether a run in this status has ended.
func IsTerminal(s waymarkv1.RunStatus) bool {
	return s == waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED || s == waymarkv1.RunStatus_RUN_STATUS_FAILED || s == waymarkv1.RunStatus_RUN_STATUS_CANCELLED
}

// pages turns a paged List call into an iterator; each page is a call of its own (with its own
// retries and, without a deadline on ctx, the client's default deadline per attempt).
func pages[T any](ctx context.Context, c *Client, fetch func(ctx context.Context, token string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		token := ""
		for {
			items, next, err := fetch(ctx, token)
			if err != nil {
				var zero T
				yield(zero, mapError(err))
				return
			}
			for _, item := range items {
				if !yield(item, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			token = next
		}
	}
}
