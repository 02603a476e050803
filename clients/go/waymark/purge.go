package waymark

import (
	"context"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// PurgeOptions narrows PurgeRuns (docs/operations.md "Purging runs").
type PurgeOptions struct {
	// OlderThan: only root runs that ended at least this long ago; 0 is every finished run.
	OlderThan time.Duration
	// Statuses: only root runs that ended so (SUCCEEDED, FAILED, CANCELLED); empty is all three.
	Statuses []waymarkv1.RunStatus
	// Workflow: only runs of this workflow; empty is every workflow.
	Workflow string
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool
	// Limit is the most root runs this call deletes, 1 to 10000; 0 is the server's 1000.
	Limit int32
}

// PurgeRuns deletes finished runs of the client's namespace that match opts, with their children
// and journals, in batches (or, with DryRun, counts them); the response's More says the call
// stopped at its limit: call again. Needs an admin key. Retried: a repeat deletes what still
// matches the same filter.
func (c *Client) PurgeRuns(ctx context.Context, opts PurgeOptions) (*waymarkv1.PurgeRunsResponse, error) {
	res, err := c.Runs.PurgeRuns(ctx, &waymarkv1.PurgeRunsRequest{
		Namespace: c.namespace, OlderThan: durationpb.New(opts.OlderThan), Statuses: opts.Statuses,
		Workflow: opts.Workflow, DryRun: opts.DryRun, Limit: opts.Limit,
	})
	return res, mapError(err)
}
