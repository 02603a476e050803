package waymark

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/grpc/codes"
)

// Live tests run against a real `waymark server --workflows test/clients/workflows.ts`, which
// test/clients/clients.test.ts starts (`npm test`), passing its address in WAYMARK_ADDRESS and,
// in WAYMARK_RESTART_URL, an endpoint that restarts the server on the same address. Without
// WAYMARK_ADDRESS they skip.

// liveClient dials the harness's server with the default options: after a restart, calls ride
// on the client's own retry policy (no WaitForReady).
func liveClient(t *testing.T, opts ...Option) *Client {
	t.Helper()
	return dialLive(t, "WAYMARK_ADDRESS", opts...)
}

func dialLive(t *testing.T, env string, opts ...Option) *Client {
	t.Helper()
	address := os.Getenv(env)
	if address == "" {
		t.Skip(env + " is not set; npm test (test/clients/clients.test.ts) runs this against a real server")
	}
	client, err := Dial(address, append([]Option{WithFailFast(30 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// restartServer asks the harness to restart the server and returns once the new one listens.
func restartServer(t *testing.T, query string) {
	t.Helper()
	control(t, "WAYMARK_RESTART_URL", "", query)
}

// control posts to one of the harness's restart endpoints (the URL in env, then path) and
// returns when it answers.
func control(t *testing.T, env, path, query string) {
	t.Helper()
	url := os.Getenv(env)
	if url == "" {
		t.Fatal(env + " is not set; the harness provides it with WAYMARK_ADDRESS")
	}
	res, err := http.Post(url+path+"?"+query, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("restart failed: %s %s", res.Status, body)
	}
}

// refundInput's order is how the harness's stand-in payment provider tells this test's refund
// apart: it checks that the order was charged exactly once.
var refundInput = map[string]any{"order": "go-A-1001", "amount": 42.5}

func uniqueKey(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

func collect[T any](t *testing.T, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for item, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, item)
	}
	return out
}

// The refund scenario: start, follow the events, see the run park on its approval, survive a
// server restart while parked (the stream reconnects by itself and misses nothing), approve,
// see it finish with the refund executed once.
func TestLiveRefundSurvivesServerRestart(t *testing.T) {
	client := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	key := uniqueKey("go-refund")
	started, err := client.StartRun(ctx, "refund", refundInput, StartOptions{IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	runID := started.GetRun().GetId()
	again, err := client.StartRun(ctx, "refund", refundInput, StartOptions{IdempotencyKey: key})
	if err != nil || again.GetCreated() || again.GetRun().GetId() != runID {
		t.Fatalf("a repeated idempotency key must return the first run: %v %v", again, err)
	}

	var (
		mu         sync.Mutex
		events     []*waymarkv1.RunEvent
		reconnects []int64
	)
	parked := make(chan struct{})
	streamed := make(chan error, 1)
	go func() {
		var once sync.Once
		opts := EventsOptions{FollowSuspended: true, OnReconnect: func(r Reconnect) {
			mu.Lock()
			reconnects = append(reconnects, r.AfterSeq)
			mu.Unlock()
		}}
		for ev, err := range client.Events(ctx, runID, opts) {
			if err != nil {
				streamed <- err
				return
			}
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
			if ev.GetStatusChanged().GetStatus() == waymarkv1.RunStatus_RUN_STATUS_SUSPENDED {
				once.Do(func() { close(parked) })
			}
		}
		streamed <- nil
	}()
	select {
	case <-parked:
	case err := <-streamed:
		t.Fatalf("the stream ended before the run parked: %v", err)
	case <-ctx.Done():
		t.Fatal("the run never parked")
	}

	// Parked: GetRun says on what, and a resume preview replays the approval from the journal.
	parkedRun, err := client.GetRun(ctx, runID)
	if err != nil || len(parkedRun.GetWaitingOn()) != 1 || parkedRun.GetWaitingOn()[0].GetKind() != "approval" {
		t.Fatalf("GetRun of the parked run: %v %v", parkedRun, err)
	}
	preview, err := client.PreviewResume(ctx, runID)
	if err != nil || preview.GetHits() < 1 || preview.GetItems()[0].GetKind() != "approval" {
		t.Fatalf("PreviewResume: %v %v", preview, err)
	}

	restartServer(t, "signal=SIGTERM")

	approvals := collect(t, client.ListApprovals(ctx, ApprovalFilter{RunID: runID}))
	if len(approvals) != 1 || approvals[0].GetState() != waymarkv1.ApprovalState_APPROVAL_STATE_PENDING {
		t.Fatalf("want one pending approval, got %v", approvals)
	}
	decided, err := client.Approve(ctx, approvals[0].GetId(), Decision{By: "go-test", Comment: "within policy"})
	if err != nil || !decided.GetApplied() {
		t.Fatalf("approve: %v %v", decided, err)
	}
	// A second, different decision loses: AlreadyResolvedError, showing who won.
	_, err = client.Deny(ctx, approvals[0].GetId(), Decision{By: "someone-else"})
	var resolved *AlreadyResolvedError
	if !errors.As(err, &resolved) || resolved.Approval.GetDecidedBy() != "go-test" {
		t.Fatalf("want AlreadyResolvedError naming the first approver, got %#v", err)
	}

	if err := <-streamed; err != nil {
		t.Fatalf("stream: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reconnects) == 0 {
		t.Fatal("the stream never reconnected, so the restart was not exercised")
	}
	var seqs []int64
	for i, ev := range events {
		if i > 0 && ev.GetSeq() <= events[i-1].GetSeq() {
			t.Fatalf("seq %d after %d: an event was repeated or out of order", ev.GetSeq(), events[i-1].GetSeq())
		}
		seqs = append(seqs, ev.GetSeq())
	}
	last := events[len(events)-1].GetStatusChanged()
	if last.GetStatus() != waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("last event %v, want SUCCEEDED", events[len(events)-1])
	}
	var output struct {
		Status   string `json:"status"`
		RefundID string `json:"refundId"`
	}
	if err := DecodeValue(last.GetOutput(), &output); err != nil || output.Status != "refunded" || output.RefundID == "" {
		t.Fatalf("output %v (%v)", last.GetOutput(), err)
	}

	// Nothing missed: the stream saw exactly the journal's entries; the refund ran once.
	journal := collect(t, client.Journal(ctx, runID, JournalOptions{}))
	var journalSeqs []int64
	charges := 0
	for _, e := range journal {
		journalSeqs = append(journalSeqs, e.GetSeq())
		if e.GetKind() == "tool" && e.GetName() == "charge_back" && e.GetStatus() == waymarkv1.EntryStatus_ENTRY_STATUS_OK {
			charges++
		}
	}
	if !slices.Equal(seqs, journalSeqs) {
		t.Fatalf("streamed seqs %v, journal seqs %v", seqs, journalSeqs)
	}
	if charges != 1 {
		t.Fatalf("charge_back executed %d times, want once", charges)
	}
	got, err := client.GetRun(ctx, runID)
	if err != nil || got.GetRun().GetStatus() != waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("GetRun: %v %v", got, err)
	}
	found := false
	for run, err := range client.ListRuns(ctx, RunFilter{Workflow: "refund", PageSize: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		if run.GetId() == runID {
			found = true
			break
		}
	}
	if !found {
		t.Fatal("ListRuns (one run per page) never reached the run")
	}
}

// Each typed error, raised by a real server response.
// StartOptions.Timeout is the run's deadline (StartRun timeout), not the call's; a negative one is refused.
// StartRun with WaitFor waits through the run's timer to its approval (OUTSIDE_INPUT); with a
// short context deadline END answers the run as it stands (WaitComplete false); after the
// decision END answers the run that ended (issue 30).
func TestLiveStartRunWaitFor(t *testing.T) {
	client := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := "go-nap-" + newUUID()
	atInput, err := client.StartRun(context.Background(), "nap_then_approve", map[string]any{}, StartOptions{IdempotencyKey: key, WaitFor: waymarkv1.WaitFor_WAIT_FOR_OUTSIDE_INPUT})
	if err != nil {
		t.Fatal(err)
	}
	waits := atInput.GetWaitingOn()
	if atInput.GetRun().GetStatus() != waymarkv1.RunStatus_RUN_STATUS_SUSPENDED || !atInput.GetWaitComplete() || len(waits) != 1 || waits[0].GetKind() != "approval" {
		t.Fatalf("OUTSIDE_INPUT answered %v", atInput)
	}
	short, cancelShort := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancelShort()
	early, err := client.StartRun(short, "nap_then_approve", map[string]any{}, StartOptions{IdempotencyKey: key, WaitFor: waymarkv1.WaitFor_WAIT_FOR_END})
	if err != nil {
		t.Fatal(err)
	}
	if early.GetCreated() || early.GetWaitComplete() || early.GetRun().GetStatus() != waymarkv1.RunStatus_RUN_STATUS_SUSPENDED {
		t.Fatalf("END with a short deadline answered %v", early)
	}
	if _, err := client.Approve(ctx, waits[0].GetApprovalId(), Decision{By: "go-client"}); err != nil {
		t.Fatal(err)
	}
	ended, err := client.StartRun(ctx, "nap_then_approve", map[string]any{}, StartOptions{IdempotencyKey: key, WaitFor: waymarkv1.WaitFor_WAIT_FOR_END})
	if err != nil {
		t.Fatal(err)
	}
	if !ended.GetWaitComplete() || ended.GetRun().GetStatus() != waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("END answered %v", ended)
	}
}

func TestLiveRunTimeout(t *testing.T) {
	client := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	started, err := client.StartRun(ctx, "drift_probe", map[string]any{}, StartOptions{Timeout: 90*time.Second + 500*time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run := started.GetRun()
	if got := run.GetDeadlineTime().AsTime().Sub(run.GetCreateTime().AsTime()); got != 90500*time.Millisecond {
		t.Fatalf("deadline - create time = %v, want 1m30.5s", got)
	}
	plain, err := client.StartRun(ctx, "drift_probe", map[string]any{}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.GetRun().GetDeadlineTime() != nil {
		t.Fatalf("a run started without a timeout has deadline %v", plain.GetRun().GetDeadlineTime())
	}
	_, err = client.StartRun(ctx, "drift_probe", map[string]any{}, StartOptions{Timeout: -time.Second})
	var e *InvalidArgumentError
	if !errors.As(err, &e) || len(e.FieldViolations) != 1 || e.FieldViolations[0].Field != "timeout" {
		t.Fatalf("got %#v", err)
	}
	for _, id := range []string{run.GetId(), plain.GetRun().GetId()} {
		_, _ = client.Cancel(ctx, id, "test done")
	}
}

func TestLiveTypedErrors(t *testing.T) {
	client := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("RunNotFound", func(t *testing.T) {
		_, err := client.GetRun(ctx, "00000000-0000-4000-8000-000000000000")
		var e *RunNotFoundError
		if !errors.As(err, &e) || e.RunID != "00000000-0000-4000-8000-000000000000" || e.Code != codes.NotFound {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("WorkflowNotFound", func(t *testing.T) {
		_, err := client.StartRun(ctx, "no_such_workflow", map[string]any{}, StartOptions{})
		var e *WorkflowNotFoundError
		if !errors.As(err, &e) || e.Workflow != "no_such_workflow" {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("InvalidArgument", func(t *testing.T) {
		_, err := client.StartRun(ctx, "refund", map[string]any{"order": 7}, StartOptions{})
		var e *InvalidArgumentError
		if !errors.As(err, &e) || len(e.FieldViolations) == 0 || !strings.HasPrefix(e.FieldViolations[0].Field, "input") {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("PayloadTooLarge", func(t *testing.T) {
		big := strings.Repeat("x", 1<<20+1)
		_, err := client.StartRun(ctx, "refund", map[string]any{"order": big, "amount": 1}, StartOptions{})
		var e *PayloadTooLargeError
		if !errors.As(err, &e) || e.LimitBytes == 0 || e.SizeBytes <= e.LimitBytes || e.Code != codes.ResourceExhausted {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("IdempotencyConflict", func(t *testing.T) {
		key := uniqueKey("go-conflict")
		first, err := client.StartRun(ctx, "drift_probe", map[string]any{}, StartOptions{IdempotencyKey: key})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.StartRun(ctx, "refund", map[string]any{"order": "A-1", "amount": 1}, StartOptions{IdempotencyKey: key})
		var e *IdempotencyConflictError
		if !errors.As(err, &e) || e.ExistingRunID != first.GetRun().GetId() {
			t.Fatalf("got %#v", err)
		}
		_, _ = client.Cancel(ctx, first.GetRun().GetId(), "test done")
	})
	t.Run("ApprovalNotFound", func(t *testing.T) {
		_, err := client.GetApproval(ctx, "00000000-0000-4000-8000-000000000000:1")
		var e *ApprovalNotFoundError
		if !errors.As(err, &e) || e.ApprovalID == "" {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("WrongState", func(t *testing.T) {
		run, err := client.StartRun(ctx, "drift_probe", map[string]any{}, StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Cancel(ctx, run.GetRun().GetId(), "to make it final"); err != nil {
			t.Fatal(err)
		}
		// A finished run takes no more signals.
		_, err = client.SendSignal(ctx, run.GetRun().GetId(), "nudge", map[string]any{}, "")
		var e *WrongStateError
		if !errors.As(err, &e) || e.Status == "" {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("Unavailable", func(t *testing.T) {
		dead, err := Dial("127.0.0.1:1", WithRetry(RetryPolicy{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond, Budget: time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		defer dead.Close()
		// Retried (with the generated idempotency key) until the budget is spent, then typed.
		_, err = dead.StartRun(ctx, "refund", refundInput, StartOptions{})
		var e *UnavailableError
		if !errors.As(err, &e) || e.Code != codes.Unavailable || !e.Retryable() {
			t.Fatalf("got %#v", err)
		}
		if _, err := Dial("127.0.0.1:1", WithFailFast(time.Second)); !errors.As(err, &e) {
			t.Fatalf("Dial with WithFailFast on a dead address: got %#v", err)
		}
	})
	t.Run("RunFailed", func(t *testing.T) {
		run, err := client.StartRun(ctx, "drift_probe", map[string]any{}, StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Cancel(ctx, run.GetRun().GetId(), "not needed"); err != nil {
			t.Fatal(err)
		}
		_, err = client.Result(ctx, run.GetRun().GetId())
		var e *RunFailedError
		if !errors.As(err, &e) || !e.Cancelled() || e.RunID != run.GetRun().GetId() {
			t.Fatalf("got %#v", err)
		}
	})
	// FlowDrift needs a server restart with a changed definition: a parked drift_probe run, then
	// the harness restarts the server with drift_probe's next version.
	t.Run("FlowDrift", func(t *testing.T) {
		run, err := client.StartRun(ctx, "drift_probe", map[string]any{}, StartOptions{Wait: true})
		if err != nil || run.GetRun().GetStatus() != waymarkv1.RunStatus_RUN_STATUS_SUSPENDED {
			t.Fatalf("want a parked run: %v %v", run, err)
		}
		restartServer(t, "drift=bump")
		_, err = client.Resume(ctx, run.GetRun().GetId(), ResumeOptions{})
		var e *FlowDriftError
		if !errors.As(err, &e) || !slices.Equal(e.Choices, []string{"restart", "abandon"}) || e.PinnedDigest == e.CurrentDigest {
			t.Fatalf("got %#v", err)
		}
		res, err := client.Resume(ctx, run.GetRun().GetId(), ResumeOptions{DriftRecovery: waymarkv1.DriftRecovery_DRIFT_RECOVERY_ABANDON})
		if err != nil || res.GetRun().GetStatus() != waymarkv1.RunStatus_RUN_STATUS_CANCELLED {
			t.Fatalf("abandon: %v %v", res, err)
		}
	})
}

// parkedProbe starts a drift_probe run, which parks on an approval, and returns its id and the
// approval's.
func parkedProbe(ctx context.Context, t *testing.T, client *Client) (runID, approvalID string) {
	t.Helper()
	run, err := client.StartRun(ctx, "drift_probe", map[string]any{}, StartOptions{Wait: true})
	if err != nil || run.GetRun().GetStatus() != waymarkv1.RunStatus_RUN_STATUS_SUSPENDED {
		t.Fatalf("want a parked run: %v %v", run, err)
	}
	approvals := collect(t, client.ListApprovals(ctx, ApprovalFilter{RunID: run.GetRun().GetId()}))
	if len(approvals) != 1 {
		t.Fatalf("want one approval, got %v", approvals)
	}
	return run.GetRun().GetId(), approvals[0].GetId()
}

// checkStream: the stream delivered exactly the run's journal, in order, ending SUCCEEDED.
func checkStream(ctx context.Context, t *testing.T, client *Client, runID string, events []*waymarkv1.RunEvent) {
	t.Helper()
	var seqs, journalSeqs []int64
	for _, ev := range events {
		seqs = append(seqs, ev.GetSeq())
	}
	for _, e := range collect(t, client.Journal(ctx, runID, JournalOptions{})) {
		journalSeqs = append(journalSeqs, e.GetSeq())
	}
	if !slices.Equal(seqs, journalSeqs) {
		t.Fatalf("streamed seqs %v, journal seqs %v: a gap or a repeat", seqs, journalSeqs)
	}
	if last := events[len(events)-1].GetStatusChanged(); last.GetStatus() != waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("last event %v, want SUCCEEDED", events[len(events)-1])
	}
}

// A follower of a parked run through two server restarts farther apart than its give-up window
// (each restart well within it): only successful reconnects tell it the server came back, as a
// parked run sends no events. It reconnects both times, then sees the run finish, every event once.
// shutdownGrace is WAYMARK_SHUTDOWN_GRACE_MS's default: how long a SIGTERMed server may drain.
const shutdownGrace = 10 * time.Second

func TestLiveFollowerSurvivesRestartsFartherApartThanGiveUp(t *testing.T) {
	if os.Getenv("WAYMARK_ADDRESS") == "" {
		t.Skip("WAYMARK_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs this against a real server")
	}
	// The window must be longer than a restart takes, which on a busy machine is anything from 2
	// to 30 s: a first restart measures it. A SIGTERM restart also drains first, for up to the
	// server's shutdown grace (10 s by default), before the new server can listen.
	began := time.Now()
	restartServer(t, "signal=SIGKILL")
	giveUp := max(10*time.Second, 3*time.Since(began)) + shutdownGrace
	client := liveClient(t, WithReconnectBackoff(Backoff{Initial: 100 * time.Millisecond, Max: time.Second, GiveUpAfter: giveUp}))
	ctx, cancel := context.WithTimeout(context.Background(), 3*giveUp+2*time.Minute)
	defer cancel()
	runID, approvalID := parkedProbe(ctx, t, client)

	var mu sync.Mutex
	var events []*waymarkv1.RunEvent
	reconnects := 0
	parked := make(chan struct{})
	streamed := make(chan error, 1)
	go func() {
		var once sync.Once
		opts := EventsOptions{FollowSuspended: true, OnReconnect: func(Reconnect) { mu.Lock(); reconnects++; mu.Unlock() }}
		for ev, err := range client.Events(ctx, runID, opts) {
			if err != nil {
				streamed <- err
				return
			}
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
			if ev.GetStatusChanged().GetStatus() == waymarkv1.RunStatus_RUN_STATUS_SUSPENDED {
				once.Do(func() { close(parked) })
			}
		}
		streamed <- nil
	}()
	select {
	case <-parked:
	case err := <-streamed:
		t.Fatalf("the stream ended before the run's history was delivered: %v", err)
	}

	var took []time.Duration
	for _, step := range []struct {
		signal string
		then   time.Duration
	}{{"SIGKILL", giveUp + 3*time.Second}, {"SIGTERM", 2 * time.Second}} {
		began := time.Now()
		restartServer(t, "signal="+step.signal)
		took = append(took, time.Since(began).Round(100*time.Millisecond))
		// After the first: longer than the window, with no event; after the second, time to
		// reconnect (backoff at most 1 s).
		time.Sleep(step.then)
	}
	select {
	case err := <-streamed:
		t.Fatalf("the follower stopped (give-up window %v, restarts took %v): %v", giveUp, took, err)
	default:
	}
	if _, err := client.Approve(ctx, approvalID, Decision{By: "go-give-up"}); err != nil {
		t.Fatal(err)
	}
	if err := <-streamed; err != nil {
		t.Fatalf("stream: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if reconnects < 2 {
		t.Fatalf("%d reconnects, want one per restart", reconnects)
	}
	checkStream(ctx, t, client, runID, events)
}

// A decision sent while a rolling restart of two replicas has the client's replica down succeeds:
// the client retries it until the replica is back. Result, followed on the other replica, rides
// through that replica's restart and returns the run's output.
func TestLiveDecisionDuringRollingRestart(t *testing.T) {
	client := liveClient(t)
	other := dialLive(t, "WAYMARK_REPLICA_ADDRESS")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runID, approvalID := parkedProbe(ctx, t, client)

	type outcome struct {
		output any
		err    error
	}
	result := make(chan outcome, 1)
	go func() {
		value, err := other.Result(ctx, runID)
		var output any
		if err == nil {
			err = DecodeValue(value, &output)
		}
		result <- outcome{output, err}
	}()

	control(t, "WAYMARK_ROLLING_RESTART_URL", "", "signal=SIGTERM") // answers once the first replica is down
	decided, err := client.Approve(ctx, approvalID, Decision{By: "go-rolling"})
	if err != nil {
		t.Fatalf("the decision failed during the rollout: %v", err)
	}
	if decided.GetApproval().GetDecidedBy() != "go-rolling" || decided.GetApproval().GetState() != waymarkv1.ApprovalState_APPROVAL_STATE_APPROVED {
		t.Fatalf("decision %v", decided)
	}
	control(t, "WAYMARK_ROLLING_RESTART_URL", "/wait", "") // returns once the rollout is over
	got := <-result
	if got.err != nil || !reflect.DeepEqual(got.output, map[string]any{"done": true}) {
		t.Fatalf("Result: %v %v", got.output, got.err)
	}
}
