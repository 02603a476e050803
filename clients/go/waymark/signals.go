package waymark

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"iter"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
)

// SendSignal delivers a named signal with a JSON payload to a run. signalID makes the delivery
// idempotent (a repeat is applied once, and answered without error with Reason "duplicate");
// empty picks a random one, so pass your own to retry safely. A run not yet waiting for the
// signal keeps it for its next wait of that name (Buffered). When another resolution already
// closed the wait, SendSignal returns *AlreadyResolvedError.
func (c *Client) SendSignal(ctx context.Context, runID, name string, payload any, signalID string) (*waymarkv1.SendSignalResponse, error) {
	value, err := ToValue(payload)
	if err != nil {
		return nil, err
	}
	if signalID == "" {
		signalID = randomID()
	}
	res, err := c.Signals.SendSignal(ctx, &waymarkv1.SendSignalRequest{Namespace: c.namespace, RunId: runID, Name: name, Payload: value, SignalId: signalID})
	if err != nil {
		return nil, mapError(err)
	}
	if !res.GetApplied() && res.GetReason() == reasonAlreadyResolved {
		e := alreadyResolved("the wait for signal " + name + " of run " + runID)
		e.Seq = res.GetSeq()
		return res, e
	}
	return res, nil
}

// ApprovalFilter selects approvals for ListApprovals; the zero value lists pending approvals.
type ApprovalFilter struct {
	RunID    string
	Workflow string
	Labels   map[string]string
	// States to include; empty means pending only.
	States   []waymarkv1.ApprovalState
	PageSize int32
}

// ListApprovals iterates over the approvals matching filter, oldest first.
func (c *Client) ListApprovals(ctx context.Context, filter ApprovalFilter) iter.Seq2[*waymarkv1.Approval, error] {
	return pages(ctx, c, func(ctx context.Context, token string) ([]*waymarkv1.Approval, string, error) {
		res, err := c.Signals.ListApprovals(ctx, &waymarkv1.ListApprovalsRequest{
			Namespace: c.namespace,
			RunId:     filter.RunID,
			Workflow:  filter.Workflow,
			Labels:    filter.Labels,
			States:    filter.States,
			PageSize:  filter.PageSize,
			PageToken: token,
		})
		return res.GetApprovals(), res.GetNextPageToken(), err
	})
}

// GetApproval returns one approval by id ("<run_id>:<seq>").
func (c *Client) GetApproval(ctx context.Context, id string) (*waymarkv1.Approval, error) {
	res, err := c.Signals.GetApproval(ctx, &waymarkv1.GetApprovalRequest{Namespace: c.namespace, Id: id})
	return res.GetApproval(), mapError(err)
}

// Decision is who decides an approval and with what.
type Decision struct {
	// By names the approver in the journal (a user name or email).
	By      string
	Comment string
	// Payload is returned to the workflow with the decision; it must satisfy the approval's
	// payload_schema.
	Payload any
	// RequestID makes the decision idempotent; empty picks a random one.
	RequestID string
}

// Approve approves an approval. Repeating a request id is answered like the first call (Reason
// "duplicate"); when another decision, a timeout or a cancellation already resolved the approval,
// Approve returns *AlreadyResolvedError along with the response.
func (c *Client) Approve(ctx context.Context, id string, d Decision) (*waymarkv1.DecideApprovalResponse, error) {
	return c.decide(ctx, id, true, d)
}

// Deny denies an approval; see Approve.
func (c *Client) Deny(ctx context.Context, id string, d Decision) (*waymarkv1.DecideApprovalResponse, error) {
	return c.decide(ctx, id, false, d)
}

func (c *Client) decide(ctx context.Context, id string, approve bool, d Decision) (*waymarkv1.DecideApprovalResponse, error) {
	value, err := ToValue(d.Payload)
	if err != nil {
		return nil, err
	}
	if d.RequestID == "" {
		d.RequestID = randomID()
	}
	res, err := c.Signals.DecideApproval(ctx, &waymarkv1.DecideApprovalRequest{
		Namespace: c.namespace, Id: id, Approve: approve, By: d.By, Comment: d.Comment, RequestId: d.RequestID, Payload: value,
	})
	if err != nil {
		return nil, mapError(err)
	}
	if !res.GetApplied() && res.GetReason() == reasonAlreadyResolved {
		e := alreadyResolved("approval " + id)
		e.Approval = res.GetApproval()
		return res, e
	}
	return res, nil
}

// reasonAlreadyResolved is the reason field of a response whose resolution lost to another.
const reasonAlreadyResolved = "already_resolved"

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
