package waymark

import (
	"context"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
)

// ForkOptions are the optional parts of Fork and PreviewFork (docs/forks.md "Options").
type ForkOptions struct {
	// IdempotencyKey is the fork's own key: a repeat returns the first fork, with Created false,
	// and executes nothing. Empty: the client makes one up for this call ("client:<uuid>"), so
	// its own retries never fork twice. PreviewFork ignores it.
	IdempotencyKey string
	// Input is the fork's input (anything encoding/json marshals); nil: the source's.
	Input any
	// WorkflowVersion is the version the fork runs on (the one the server runs); empty: the
	// source's pinned version and digest.
	WorkflowVersion string
	// Model is the model every live model call of the fork's agents uses; empty: the source's.
	Model string
	// Decision decides the approval at the fork point (which must then be an approval); nil: the
	// fork parks on it as the source did.
	Decision *ForkDecision
	// BudgetUSD is the fork's budget; nil: the source's.
	BudgetUSD *float64
	// Labels are added to the source's.
	Labels map[string]string
	// Wait executes the fork on the server that received the call and answers once it ends or
	// parks. PreviewFork ignores it.
	Wait bool
}

// ForkDecision is a decision for the approval at a fork's fork point, journaled as its resolution.
type ForkDecision struct {
	Approve bool
	Comment string
	// By is who decided; empty: "fork".
	By string
}

// Fork forks a run at the entry atSeq (docs/forks.md): a new run of the same workflow that keeps
// every result the source recorded before that entry and executes from there, with the options'
// changes. The source is only read. An entry in the middle of an effect names the whole effect:
// the response's ForkSeq is the fork point after that move. Retried like StartRun: with the
// client's generated key a retry that finds the fork reports Created true. An invalid fork
// point, decision, model or version is *InvalidArgumentError (reason INVALID_FORK).
func (c *Client) Fork(ctx context.Context, runID string, atSeq int64, opts ForkOptions) (*waymarkv1.ForkRunResponse, error) {
	req, err := c.forkRequest(runID, atSeq, opts)
	if err != nil {
		return nil, err
	}
	generated := opts.IdempotencyKey == ""
	req.IdempotencyKey = opts.IdempotencyKey
	if generated {
		req.IdempotencyKey = "client:" + newUUID()
	}
	req.Wait = opts.Wait
	res, err := c.Runs.ForkRun(ctx, req)
	if err != nil {
		return nil, mapError(err)
	}
	if generated {
		// Nobody else holds the key: created = false can only be this call's own retry.
		res.Created = true
	}
	return res, nil
}

// PreviewFork answers what Fork would keep, redo and cost (ForkRun with dry_run), computed with
// no live calls and nothing written.
func (c *Client) PreviewFork(ctx context.Context, runID string, atSeq int64, opts ForkOptions) (*waymarkv1.ForkPreview, error) {
	req, err := c.forkRequest(runID, atSeq, opts)
	if err != nil {
		return nil, err
	}
	req.DryRun = true
	res, err := c.Runs.ForkRun(ctx, req)
	if err != nil {
		return nil, mapError(err)
	}
	return res.GetPreview(), nil
}

func (c *Client) forkRequest(runID string, atSeq int64, opts ForkOptions) (*waymarkv1.ForkRunRequest, error) {
	req := &waymarkv1.ForkRunRequest{
		Namespace: c.namespace, RunId: runID, AtSeq: atSeq, WorkflowVersion: opts.WorkflowVersion, Model: opts.Model,
		BudgetUsd: opts.BudgetUSD, Labels: opts.Labels,
	}
	if opts.Input != nil {
		value, err := ToValue(opts.Input)
		if err != nil {
			return nil, err
		}
		req.Input = value
	}
	if d := opts.Decision; d != nil {
		req.Decision = &waymarkv1.ForkDecision{Approve: d.Approve, Comment: d.Comment, By: d.By}
	}
	return req, nil
}

// CompareRuns compares two runs of one workflow effect by effect (docs/forks.md "Comparing
// runs"): for each effect what each run recorded (output, model, tokens, cost, duration) and
// whether it differs, and each run's totals. Runs of different workflows are
// *InvalidArgumentError (reason RUNS_NOT_COMPARABLE).
func (c *Client) CompareRuns(ctx context.Context, runIDA, runIDB string) (*waymarkv1.CompareRunsResponse, error) {
	res, err := c.Runs.CompareRuns(ctx, &waymarkv1.CompareRunsRequest{Namespace: c.namespace, RunIdA: runIDA, RunIdB: runIDB})
	return res, mapError(err)
}
