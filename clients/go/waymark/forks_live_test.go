package waymark

import (
	"context"
	"errors"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
)

// A refund parked on its approval is forked at the approval with a denial: the preview keeps what
// came before, the fork ends declined by the decision while the source still waits, the two are
// linked both ways, a repeat of the fork's key returns the same fork, and the comparison marks
// the approval as changed and the entries before it as kept.
func TestLiveForkAtTheApprovalWithADenial(t *testing.T) {
	client := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	started, err := client.StartRun(ctx, "refund", map[string]any{"order": "F-" + randomID()[:8], "amount": 3}, StartOptions{WaitFor: waymarkv1.WaitFor_WAIT_FOR_OUTSIDE_INPUT})
	if err != nil {
		t.Fatal(err)
	}
	source := started.GetRun().GetId()
	defer func() { _, _ = client.Cancel(context.Background(), source, "test done") }()
	approval := int64(-1)
	for entry, err := range client.Journal(ctx, source, JournalOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if entry.GetKind() == "approval" && entry.GetStatus() == waymarkv1.EntryStatus_ENTRY_STATUS_SUSPENDED {
			approval = entry.GetSeq()
		}
	}
	if approval < 0 {
		t.Fatalf("run %s has no open approval", source)
	}

	preview, err := client.PreviewFork(ctx, source, approval, ForkOptions{Decision: &ForkDecision{Approve: false}})
	if err != nil {
		t.Fatal(err)
	}
	if preview.GetForkSeq() != approval || preview.GetKept() < int32(approval) || preview.GetReplay() == nil {
		t.Fatalf("preview %v, fork point %d", preview, approval)
	}

	key := "go-live-fork-" + randomID()
	decision := &ForkDecision{Approve: false, Comment: "forked", By: "go-client"}
	forked, err := client.Fork(ctx, source, approval, ForkOptions{IdempotencyKey: key, Decision: decision, Wait: true, Labels: map[string]string{"via": "go"}})
	if err != nil {
		t.Fatal(err)
	}
	fork := forked.GetRun()
	if !forked.GetCreated() || forked.GetForkSeq() != approval || fork.GetForkedFromRunId() != source || fork.GetLabels()["via"] != "go" {
		t.Fatalf("fork answered %v", forked)
	}
	out, err := client.Result(ctx, fork.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if fields := out.GetStructValue().GetFields(); fields["status"].GetStringValue() != "declined" || fields["by"].GetStringValue() != "go-client" {
		t.Fatalf("the fork returned %v", out)
	}
	again, err := client.Fork(ctx, source, approval, ForkOptions{IdempotencyKey: key, Decision: decision})
	if err != nil || again.GetCreated() || again.GetRun().GetId() != fork.GetId() {
		t.Fatalf("a repeat of the key: %v, %v", again, err)
	}
	got, err := client.GetRun(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetRun().GetStatus() != waymarkv1.RunStatus_RUN_STATUS_SUSPENDED || len(got.GetForks()) != 1 || got.GetForks()[0] != fork.GetId() {
		t.Fatalf("the source after the fork: %v", got)
	}

	cmp, err := client.CompareRuns(ctx, source, fork.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if cmp.ForkSeq == nil || cmp.GetForkSeq() != approval {
		t.Fatalf("compare fork_seq %v, want %d", cmp.ForkSeq, approval)
	}
	var approvalDiff *waymarkv1.EffectComparison
	for _, e := range cmp.GetEffects() {
		if e.GetKind() == "approval" {
			approvalDiff = e
		}
	}
	if approvalDiff == nil || approvalDiff.GetDifference() != waymarkv1.EffectDifference_EFFECT_DIFFERENCE_CHANGED {
		t.Fatalf("the approval compares as %v (effects %v)", approvalDiff, cmp.GetEffects())
	}

	_, err = client.Fork(ctx, source, 100_000, ForkOptions{})
	var invalid *InvalidArgumentError
	if !errors.As(err, &invalid) || invalid.Reason != "INVALID_FORK" {
		t.Fatalf("a fork point past the journal: %#v", err)
	}
}
