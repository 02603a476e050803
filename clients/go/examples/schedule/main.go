// Command schedule is the schedules example of clients/go/README.md as an application: create a
// schedule that starts a workflow every night at 02:00 Berlin time, move it to Tokyo time (an
// update of its spec that keeps the rest), trigger one run now and print it once the sweeper has
// started it, with the labels the schedule gave it. Run it against `npm start` (waymark dev, whose
// sweeper takes the ticks): `go run ./examples/schedule [address] [schedule-id] [workflow]
// [input-json]` (default: the refund example); it reads WAYMARK_TOKEN and WAYMARK_NAMESPACE as
// examples/refund does. test/clients/flow-clients.test.ts runs it beside the Python and TypeScript
// clients and compares the schedules the three wrote.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/waymark"
	"google.golang.org/protobuf/types/known/durationpb"
)

func main() {
	args := []string{waymark.DefaultAddress, "nightly-refund", "refund", `{"order": "A-1001", "amount": 42.5}`}
	copy(args, os.Args[1:])
	address, id, workflow := args[0], args[1], args[2]
	var input any
	if err := json.Unmarshal([]byte(args[3]), &input); err != nil {
		log.Fatalf("the input is not JSON: %v", err)
	}
	client, err := waymark.Dial(address, waymark.WithFailFast(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	value, err := waymark.ToValue(input)
	if err != nil {
		log.Fatal(err)
	}
	remaining := int64(100)
	created, err := client.CreateSchedule(ctx, &waymarkv1.Schedule{
		Id: id,
		Spec: &waymarkv1.ScheduleSpec{
			Cron:     []string{"0 2 * * *"},
			TimeZone: "Europe/Berlin",
			Exclude:  []string{"0 2 25 12 *"}, // not on Christmas
			Jitter:   durationpb.New(30 * time.Second),
		},
		Action: &waymarkv1.ScheduleAction{Workflow: workflow, Input: value, Labels: map[string]string{"team": "payments"}, Timeout: durationpb.New(time.Hour)},
		Policies: &waymarkv1.SchedulePolicies{
			Overlap:        waymarkv1.ScheduleOverlapPolicy_SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
			CatchupWindow:  durationpb.New(5 * time.Minute),
			PauseOnFailure: true,
		},
		RemainingActions: &remaining,
	})
	var exists *waymark.ScheduleExistsError
	if errors.As(err, &exists) {
		log.Fatalf("schedule %s exists already: delete it first (DeleteSchedule, or waymark schedules delete)", exists.ScheduleID)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("schedule %s created: next run at %s\n", id, created.GetInfo().GetFutureActionTimes()[0].AsTime().Format(time.RFC3339))

	// Change one value: read the schedule, change it, send back the part it is in.
	s, err := client.GetSchedule(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	s.Spec.TimeZone = "Asia/Tokyo"
	if s, err = client.UpdateSchedule(ctx, s, waymark.ScheduleFieldSpec); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("schedule %s now ticks %v in %s\n", id, s.GetSpec().GetCron(), s.GetSpec().GetTimeZone())

	if _, err := client.TriggerSchedule(ctx, id, waymarkv1.ScheduleOverlapPolicy_SCHEDULE_OVERLAP_POLICY_UNSPECIFIED); err != nil {
		log.Fatal(err)
	}
	for {
		for run, err := range client.ListRuns(ctx, waymark.RunFilter{Labels: map[string]string{"waymark.schedule_id": id}}) {
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("run %s of %s started by schedule %s, scheduled at %s, team %s\n", run.GetId(), run.GetWorkflowName(), id,
				run.GetLabels()["waymark.scheduled_at"], run.GetLabels()["team"])
			return
		}
		select {
		case <-ctx.Done():
			log.Fatal("no run within two minutes: is a sweeper running? (waymark dev runs one; a server alone does not)")
		case <-time.After(250 * time.Millisecond):
		}
	}
}
