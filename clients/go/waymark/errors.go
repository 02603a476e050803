package waymark

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Reasons the server puts in google.rpc.ErrorInfo (domain "waymark") that map to a typed error
// below; other reasons (TOOL_NOT_FOUND, JOURNAL_FULL, ...) arrive as an *APIError with Reason set.
const (
	ReasonRunNotFound         = "RUN_NOT_FOUND"
	ReasonWorkflowNotFound    = "WORKFLOW_NOT_FOUND"
	ReasonApprovalNotFound    = "APPROVAL_NOT_FOUND"
	ReasonFlowDrift           = "FLOW_DRIFT"
	ReasonPayloadTooLarge     = "PAYLOAD_TOO_LARGE"
	ReasonAlreadyResolved     = "ALREADY_RESOLVED"
	ReasonLeaseLost           = "LEASE_LOST"
	ReasonWrongState          = "WRONG_STATE"
	ReasonIdempotencyConflict = "IDEMPOTENCY_KEY_REUSED"
	ReasonInvalidFlow         = "INVALID_FLOW"
	ReasonFlowNotFound        = "FLOW_NOT_FOUND"
	ReasonFlowNameTaken       = "FLOW_NAME_TAKEN"
	ReasonMcpServerNotFound   = "MCP_SERVER_NOT_FOUND"
	ReasonScheduleNotFound    = "SCHEDULE_NOT_FOUND"
	ReasonScheduleExists      = "SCHEDULE_EXISTS"
)

// FieldViolation is one invalid field of a request (google.rpc.BadRequest).
type FieldViolation struct {
	Field       string
	Description string
}

// APIError is a failed call as the server answered it: the gRPC code and message plus the
// structured details. Every typed error embeds one, so errors.As(err, &apiErr) works for all.
type APIError struct {
	Code    codes.Code
	Message string
	// Reason and Domain come from google.rpc.ErrorInfo; Reason is empty when the server sent none.
	Reason   string
	Domain   string
	Metadata map[string]string
	// FieldViolations come from google.rpc.BadRequest (INVALID_ARGUMENT).
	FieldViolations []FieldViolation
	// RetryDelay comes from google.rpc.RetryInfo; zero when absent.
	RetryDelay time.Duration

	status *status.Status
}

func (e *APIError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("waymark: %s (%s/%s)", e.Message, e.Code, e.Reason)
	}
	return fmt.Sprintf("waymark: %s (%s)", e.Message, e.Code)
}

// GRPCStatus lets status.Code and status.FromError see through the wrapper.
func (e *APIError) GRPCStatus() *status.Status { return e.status }

// Retryable reports whether the same call may succeed later: the server is unavailable, or it
// asked the caller to back off.
func (e *APIError) Retryable() bool {
	return e.Code == codes.Unavailable || e.RetryDelay > 0
}

// RunNotFoundError: the run id is unknown in this namespace (NOT_FOUND).
type RunNotFoundError struct {
	*APIError
	RunID string
}

// WorkflowNotFoundError: no workflow of that name is registered on the server (NOT_FOUND).
type WorkflowNotFoundError struct {
	*APIError
	Workflow string
}

// ApprovalNotFoundError: the approval id is unknown (NOT_FOUND).
type ApprovalNotFoundError struct {
	*APIError
	ApprovalID string
}

// FlowDriftError: the run was started with another definition of its workflow and the
// workflow's drift policy is strict (FAILED_PRECONDITION). Choices lists the recoveries the
// server offers, e.g. "restart" and "abandon".
type FlowDriftError struct {
	*APIError
	RunID         string
	Choices       []string
	PinnedDigest  string
	CurrentDigest string
}

// PayloadTooLargeError: a JSON payload or the request is over a server limit (RESOURCE_EXHAUSTED).
type PayloadTooLargeError struct {
	*APIError
	Field      string
	SizeBytes  int64
	LimitBytes int64
}

// InvalidArgumentError: the request failed validation (INVALID_ARGUMENT); FieldViolations says where.
type InvalidArgumentError struct{ *APIError }

// InvalidFlowError: RegisterFlow refused the flow (INVALID_ARGUMENT) and stored nothing;
// FieldViolations name each problem by its exact path, e.g. "flow.edges[3].condition". It is
// also an *InvalidArgumentError for errors.As.
type InvalidFlowError struct {
	*InvalidArgumentError
	Flow string
}

// FlowNotFoundError: the namespace has no flow of that name, or not that version (NOT_FOUND).
type FlowNotFoundError struct {
	*APIError
	Flow    string
	Version string
}

// McpServerNotFoundError: the namespace has no MCP server of that name (NOT_FOUND).
type McpServerNotFoundError struct {
	*APIError
	Server string
}

// ScheduleNotFoundError: the namespace has no schedule of that id (NOT_FOUND).
type ScheduleNotFoundError struct {
	*APIError
	ScheduleID string
}

// ScheduleExistsError: CreateSchedule with an id the namespace already has (ALREADY_EXISTS).
type ScheduleExistsError struct {
	*APIError
	ScheduleID string
}

// FlowNameTakenError: a code workflow registered on the server has the flow's name
// (ALREADY_EXISTS); flows and code workflows share one namespace of names.
type FlowNameTakenError struct {
	*APIError
	Flow string
}

// AlreadyResolvedError: the approval or signal wait was already resolved by another decision,
// signal, timeout or cancellation. The server answers such a call successfully with applied =
// false and reason "already_resolved"; Approve, Deny and SendSignal return this error for it (a
// repeat of the same request id or signal id is not an error).
type AlreadyResolvedError struct {
	*APIError
	// Approval is the approval as it stands (for Approve and Deny), showing who decided.
	Approval *waymarkv1.Approval
	// Seq is the journal seq recording the losing delivery (for SendSignal).
	Seq int64
}

// LeaseLostError: another worker took over the run (ABORTED). Stop; do not retry.
type LeaseLostError struct {
	*APIError
	RunID string
}

// WrongStateError: the run's status does not allow the operation, e.g. resuming a finished run
// (FAILED_PRECONDITION).
type WrongStateError struct {
	*APIError
	Status string
}

// UnavailableError: the server could not be reached, the connection dropped, or the server is
// shutting down (UNAVAILABLE), after the client's own retries (docs/clients.md) ran out, or an
// event stream gave up reconnecting. Retry later, or against another replica.
type UnavailableError struct {
	*APIError
	// NotSent is true when the request certainly did not reach the server (no connection came
	// up to send it on); false when it may have.
	NotSent bool
}

// RunFailedError: Result waited for a run that ended FAILED or CANCELLED. Err is the run's error
// as the server recorded it (name, message, reason, details).
type RunFailedError struct {
	RunID  string
	Status waymarkv1.RunStatus
	Err    *waymarkv1.RunError
}

func (e *RunFailedError) Error() string {
	what := "failed"
	if e.Status == waymarkv1.RunStatus_RUN_STATUS_CANCELLED {
		what = "was cancelled"
	}
	if e.Err.GetMessage() == "" {
		return fmt.Sprintf("waymark: run %s %s", e.RunID, what)
	}
	return fmt.Sprintf("waymark: run %s %s: %s: %s", e.RunID, what, e.Err.GetName(), e.Err.GetMessage())
}

// RunCancelledError: Result waited for a run that ended CANCELLED; a kind of RunFailedError.
type RunCancelledError struct{ *RunFailedError }

func (e *RunCancelledError) Unwrap() error { return e.RunFailedError }

// Cancelled reports whether the run was cancelled rather than failed.
func (e *RunFailedError) Cancelled() bool {
	return e.Status == waymarkv1.RunStatus_RUN_STATUS_CANCELLED
}

// IdempotencyConflictError: the idempotency key already started a run of another workflow
// (ALREADY_EXISTS).
type IdempotencyConflictError struct {
	*APIError
	ExistingRunID string
}

func (e *RunNotFoundError) Unwrap() error         { return e.APIError }
func (e *WorkflowNotFoundError) Unwrap() error    { return e.APIError }
func (e *ApprovalNotFoundError) Unwrap() error    { return e.APIError }
func (e *FlowDriftError) Unwrap() error           { return e.APIError }
func (e *PayloadTooLargeError) Unwrap() error     { return e.APIError }
func (e *InvalidArgumentError) Unwrap() error     { return e.APIError }
func (e *AlreadyResolvedError) Unwrap() error     { return e.APIError }
func (e *LeaseLostError) Unwrap() error           { return e.APIError }
func (e *WrongStateError) Unwrap() error          { return e.APIError }
func (e *McpServerNotFoundError) Unwrap() error   { return e.APIError }
func (e *IdempotencyConflictError) Unwrap() error { return e.APIError }
func (e *UnavailableError) Unwrap() error         { return e.APIError }
func (e *InvalidFlowError) Unwrap() error         { return e.InvalidArgumentError }
func (e *FlowNotFoundError) Unwrap() error        { return e.APIError }
func (e *FlowNameTakenError) Unwrap() error       { return e.APIError }
func (e *ScheduleNotFoundError) Unwrap() error    { return e.APIError }
func (e *ScheduleExistsError) Unwrap() error      { return e.APIError }

// mapError turns an error from a generated stub into the typed error its status details name.
// Errors that carry no gRPC status (context cancellation, nil) pass through unchanged.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var typed *UnavailableError
	if errors.As(err, &typed) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return FromStatus(st)
}

// FromStatus builds the typed error for a gRPC status, e.g. one decoded from a
// grpc-status-details-bin trailer. It returns nil for an OK status.
func FromStatus(st *status.Status) error {
	if st == nil || st.Code() == codes.OK {
		return nil
	}
	base := &APIError{Code: st.Code(), Message: st.Message(), Metadata: map[string]string{}, status: st}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			base.Reason, base.Domain = d.GetReason(), d.GetDomain()
			for k, v := range d.GetMetadata() {
				base.Metadata[k] = v
			}
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				base.FieldViolations = append(base.FieldViolations, FieldViolation{Field: v.GetField(), Description: v.GetDescription()})
			}
		case *errdetails.RetryInfo:
			base.RetryDelay = d.GetRetryDelay().AsDuration()
		}
	}
	meta := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := base.Metadata[k]; ok {
				return v
			}
		}
		return ""
	}
	switch base.Reason {
	case ReasonRunNotFound:
		return &RunNotFoundError{APIError: base, RunID: meta("run_id")}
	case ReasonWorkflowNotFound:
		return &WorkflowNotFoundError{APIError: base, Workflow: meta("workflow")}
	case ReasonApprovalNotFound:
		return &ApprovalNotFoundError{APIError: base, ApprovalID: meta("approval_id")}
	case ReasonFlowDrift:
		return &FlowDriftError{
			APIError:      base,
			RunID:         meta("run_id"),
			Choices:       splitList(meta("choices")),
			PinnedDigest:  meta("pinned_digest"),
			CurrentDigest: meta("current_digest"),
		}
	case ReasonPayloadTooLarge:
		size, _ := strconv.ParseInt(meta("size_bytes"), 10, 64)
		limit, _ := strconv.ParseInt(meta("limit_bytes"), 10, 64)
		return &PayloadTooLargeError{APIError: base, Field: meta("field"), SizeBytes: size, LimitBytes: limit}
	case ReasonAlreadyResolved:
		return &AlreadyResolvedError{APIError: base}
	case ReasonLeaseLost:
		return &LeaseLostError{APIError: base, RunID: meta("run_id")}
	case ReasonWrongState:
		return &WrongStateError{APIError: base, Status: meta("status")}
	case ReasonIdempotencyConflict:
		return &IdempotencyConflictError{APIError: base, ExistingRunID: meta("existing_run_id")}
	case ReasonInvalidFlow:
		return &InvalidFlowError{InvalidArgumentError: &InvalidArgumentError{APIError: base}, Flow: meta("flow")}
	case ReasonFlowNotFound:
		return &FlowNotFoundError{APIError: base, Flow: meta("flow"), Version: meta("version")}
	case ReasonFlowNameTaken:
		return &FlowNameTakenError{APIError: base, Flow: meta("flow")}
	case ReasonMcpServerNotFound:
		return &McpServerNotFoundError{APIError: base, Server: meta("server")}
	case ReasonScheduleNotFound:
		return &ScheduleNotFoundError{APIError: base, ScheduleID: meta("schedule_id")}
	case ReasonScheduleExists:
		return &ScheduleExistsError{APIError: base, ScheduleID: meta("schedule_id")}
	}
	switch base.Code {
	case codes.InvalidArgument:
		return &InvalidArgumentError{APIError: base}
	case codes.Unavailable:
		return &UnavailableError{APIError: base}
	}
	return base
}

// alreadyResolved is the error for a decision or signal that another resolution beat.
func alreadyResolved(what string) *AlreadyResolvedError {
	msg := what + " was already resolved by another decision, signal, timeout or cancellation; nothing was changed"
	return &AlreadyResolvedError{APIError: &APIError{
		Code: codes.FailedPrecondition, Message: msg, Reason: ReasonAlreadyResolved, Metadata: map[string]string{},
		status: status.New(codes.FailedPrecondition, msg),
	}}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
