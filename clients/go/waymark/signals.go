package waymark

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"iter"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
)

// SendSignal delivers a named signal with a JSON payload to a run. signalID makes the delivery
// idempotent: a repeat is applied once and answered with the first delivery's outcome (Applied,
// Reason "duplicate"); empty picks a random one for this call, so the client's own retries are
// safe; pass your own to make your repeats safe too. A run not yet waiting for the
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
	lost := !res.GetApplied() && res.GetReason() == reasonAlreadyResolved
	if !res.GetApplied() && res.GetReason() == reasonDuplicate && !res.GetBuffered() && res.GetSeq() > 0 {
		// A repeat of this signal id (a retry, or the caller's): the outcome of the first, which
		// the journal entry at seq records (RESOLVED: it won; NOOP: it lost).
		after := res.GetSeq() - 1
		for entry, err := range c.Journal(ctx, runID, JournalOptions{AfterSeq: &after, PageSize: 1}) {
			if err != nil {
				return res, err
			}
			if entry.GetSeq() == res.GetSeq() {
				res.Applied = entry.GetStatus() == waymarkv1.EntryStatus_ENTRY_STATUS_RESOLVED
				lost = !res.Applied
			}
			break
		}
	}
	if lost {
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

// Approve approves an approval. Repeating a request id (the client's retry, or yours) is answered
// with the first decision's outcome (Applied, Reason "duplicate"); when another decision, a timeout or a cancellation already resolved the approval,
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
	if !res.GetApplied() && res.GetReason() == reasonDuplicate {
		// A repeat of this request id (a retry, or the caller's): the outcome of the first.
		want := waymarkv1.ApprovalState_APPROVAL_STATE_DENIED
		if approve {
			want = waymarkv1.ApprovalState_APPROVAL_STATE_APPROVED
		}
		if a := res.GetApproval(); a.GetState() == want && a.GetDecidedBy() == d.By {
			res.Applied = true
			return res, nil
		}
	}
	if !res.GetApplied() && (res.GetReason() == reasonAlreadyResolved || res.GetReason() == reasonDuplicate) {
		e := alreadyResolved("approval " + id)
		e.Approval = res.GetApproval()
		return res, e
	}
	return res, nil
}

// The reason field of a response whose resolution lost to another, and of a repeat.
const (
	reasonAlreadyResolved = "already_resolved"
	reasonDuplicate       = "duplicate"
)

// newUUID is a random (version 4) UUID.
func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
