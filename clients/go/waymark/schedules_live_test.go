package waymark

import (
	"context"
	"errors"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// A schedule's life from Go against the harness's server and sweeper (which takes the ticks):
// create (a taken id is *ScheduleExistsError), get with its next times, list, change its time
// zone keeping its cron expression, pause and unpause, trigger one run and see it start with the
// schedule's labels and finish, delete (then *ScheduleNotFoundError).
func TestLiveSchedules(t *testing.T) {
	client := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	id := uniqueKey("go-schedule")
	input, err := ToValue(map[string]any{"note": id})
	if err != nil {
		t.Fatal(err)
	}
	definition := &waymarkv1.Schedule{
		Id: id,
		// Midnight on 1 January: no tick of its own while the test runs; the run comes from the trigger.
		Spec:     &waymarkv1.ScheduleSpec{Cron: []string{"0 0 1 1 *"}, TimeZone: "Europe/Berlin"},
		Action:   &waymarkv1.ScheduleAction{Workflow: "scheduled_echo", Input: input, Labels: map[string]string{"suite": "go-live"}, Timeout: durationpb.New(time.Minute)},
		Policies: &waymarkv1.SchedulePolicies{CatchupWindow: durationpb.New(2 * time.Minute)},
	}
	created, err := client.CreateSchedule(ctx, definition)
	if err != nil {
		t.Fatal(err)
	}
	if created.GetId() != id || created.GetPaused() || len(created.GetInfo().GetFutureActionTimes()) == 0 {
		t.Fatalf("created %v", created)
	}
	var exists *ScheduleExistsError
	if _, err := client.CreateSchedule(ctx, definition); !errors.As(err, &exists) || exists.ScheduleID != id {
		t.Fatalf("want ScheduleExistsError for a taken id, got %#v", err)
	}

	got, err := client.GetSchedule(ctx, id)
	if err != nil || got.GetAction().GetWorkflow() != "scheduled_echo" || len(got.GetInfo().GetFutureActionTimes()) != 10 {
		t.Fatalf("get: %v %v", got, err)
	}
	listed := false
	for s, err := range client.ListSchedules(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		listed = listed || s.GetId() == id
	}
	if !listed {
		t.Fatalf("ListSchedules does not list %s", id)
	}

	got.Spec.TimeZone = "Asia/Tokyo"
	moved, err := client.UpdateSchedule(ctx, got, ScheduleFieldSpec)
	if err != nil || moved.GetSpec().GetTimeZone() != "Asia/Tokyo" || len(moved.GetSpec().GetCron()) != 1 || moved.GetSpec().GetCron()[0] != "0 0 1 1 *" ||
		moved.GetAction().GetLabels()["suite"] != "go-live" {
		t.Fatalf("an update of the spec must keep the cron expression and the action: %v %v", moved, err)
	}
	if paused, err := client.PauseSchedule(ctx, id, "go test"); err != nil || !paused.GetPaused() || paused.GetNote() != "go test" {
		t.Fatalf("pause: %v %v", paused, err)
	}
	if unpaused, err := client.UnpauseSchedule(ctx, id, "go test again"); err != nil || unpaused.GetPaused() {
		t.Fatalf("unpause: %v %v", unpaused, err)
	}

	if _, err := client.TriggerSchedule(ctx, id, waymarkv1.ScheduleOverlapPolicy_SCHEDULE_OVERLAP_POLICY_ALLOW_ALL); err != nil {
		t.Fatal(err)
	}
	var run *waymarkv1.Run
	for run == nil {
		runs := collect(t, client.ListRuns(ctx, RunFilter{Labels: map[string]string{"waymark.schedule_id": id}}))
		if len(runs) > 1 {
			t.Fatalf("one trigger started %d runs", len(runs))
		}
		if len(runs) == 1 {
			run = runs[0]
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the sweeper did not start the triggered run")
		case <-time.After(200 * time.Millisecond):
		}
	}
	labels := run.GetLabels()
	if run.GetWorkflowName() != "scheduled_echo" || labels["suite"] != "go-live" || labels["waymark.scheduled_at"] == "" {
		t.Fatalf("the triggered run: %v", run)
	}
	out, err := client.Result(ctx, run.GetId())
	var result map[string]any
	if err != nil || DecodeValue(out, &result) != nil || result["echoed"] != id {
		t.Fatalf("the triggered run's result: %v %v", out, err)
	}
	after, err := client.GetSchedule(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	recent := after.GetInfo().GetRecentActions()
	if len(recent) != 1 || recent[0].GetRunId() != run.GetId() || recent[0].GetCause() != waymarkv1.ScheduleActionCause_SCHEDULE_ACTION_CAUSE_TRIGGER {
		t.Fatalf("recent actions: %v", recent)
	}

	if err := client.DeleteSchedule(ctx, id); err != nil {
		t.Fatal(err)
	}
	var missing *ScheduleNotFoundError
	if _, err := client.GetSchedule(ctx, id); !errors.As(err, &missing) || missing.ScheduleID != id {
		t.Fatalf("want ScheduleNotFoundError after the delete, got %#v", err)
	}
	if err := client.DeleteSchedule(ctx, id); !errors.As(err, &missing) {
		t.Fatalf("a second delete: want ScheduleNotFoundError, got %#v", err)
	}
	if _, err := client.GetRun(ctx, run.GetId()); err != nil {
		t.Fatalf("the schedule's run is kept after the delete: %v", err)
	}
}
