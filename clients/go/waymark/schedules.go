package waymark

import (
	"context"
	"errors"
	"iter"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Schedules (ScheduleService, docs/schedules.md): runs of a workflow or flow started on a
// calendar, exactly once per tick. The wrappers take and return the generated messages
// (waymarkv1.Schedule with its ScheduleSpec, ScheduleAction and SchedulePolicies), fill in the
// client's namespace, retry as docs/clients.md says and return typed errors: an unknown id is
// *ScheduleNotFoundError, a taken one *ScheduleExistsError, a spec or input the server refuses
// *InvalidArgumentError naming the field ("schedule.spec.cron[0]"). Client.Schedules is the
// generated stub.

// ScheduleField names a part of a schedule UpdateSchedule replaces (a path of the update mask).
type ScheduleField string

// The parts of a schedule an update replaces; Pause and Unpause have their own calls.
const (
	ScheduleFieldSpec             ScheduleField = "spec"
	ScheduleFieldAction           ScheduleField = "action"
	ScheduleFieldPolicies         ScheduleField = "policies"
	ScheduleFieldRemainingActions ScheduleField = "remaining_actions"
)

// CreateSchedule creates schedule.Id in the client's namespace and returns it as stored, with its
// next times. Its first tick is the first after now (or after the spec's StartTime); Paused
// creates it paused. An id the namespace has is *ScheduleExistsError; a spec, or an input the
// workflow's input schema refuses, is *InvalidArgumentError and nothing is stored.
//
// Sent once, after waiting for a connection: a repeat of an applied create would answer
// SCHEDULE_EXISTS. On *UnavailableError with NotSent false, GetSchedule tells whether it was made.
func (c *Client) CreateSchedule(ctx context.Context, schedule *waymarkv1.Schedule) (*waymarkv1.Schedule, error) {
	if schedule == nil {
		return nil, errors.New("waymark: CreateSchedule needs a schedule")
	}
	res, err := c.Schedules.CreateSchedule(ctx, &waymarkv1.CreateScheduleRequest{Namespace: c.namespace, Schedule: schedule})
	return res.GetSchedule(), mapError(err)
}

// GetSchedule returns a schedule with its counters, recent actions (Info.RecentActions, each with
// its run id and cause) and next ten times; *ScheduleNotFoundError when there is none.
func (c *Client) GetSchedule(ctx context.Context, id string) (*waymarkv1.Schedule, error) {
	res, err := c.Schedules.GetSchedule(ctx, &waymarkv1.GetScheduleRequest{Namespace: c.namespace, ScheduleId: id})
	return res.GetSchedule(), mapError(err)
}

// ListSchedules iterates over the namespace's schedules by id, each with its next time only,
// fetching pages of pageSize (0: the server's default, 50) as the loop advances. A failed call
// ends the iteration with its error.
func (c *Client) ListSchedules(ctx context.Context, pageSize int32) iter.Seq2[*waymarkv1.Schedule, error] {
	return pages(ctx, c, func(ctx context.Context, token string) ([]*waymarkv1.Schedule, string, error) {
		res, err := c.Schedules.ListSchedules(ctx, &waymarkv1.ListSchedulesRequest{Namespace: c.namespace, PageSize: pageSize, PageToken: token})
		return res.GetSchedules(), res.GetNextPageToken(), err
	})
}

// UpdateSchedule replaces the parts fields names of schedule schedule.Id with schedule's, and
// keeps the others; no fields replaces all four (the whole schedule, as Temporal's update does).
// To change one value, read the schedule, change it and send back the part it is in:
//
//	s, err := client.GetSchedule(ctx, "reports")
//	s.Spec.TimeZone = "Asia/Tokyo"
//	s, err = client.UpdateSchedule(ctx, s, waymark.ScheduleFieldSpec) // the cron expressions stay
//
// A new spec ticks from now on (past ticks are not caught up); runs already started are
// untouched. Retried like a read: a repeat writes the same values again.
func (c *Client) UpdateSchedule(ctx context.Context, schedule *waymarkv1.Schedule, fields ...ScheduleField) (*waymarkv1.Schedule, error) {
	if schedule == nil {
		return nil, errors.New("waymark: UpdateSchedule needs a schedule")
	}
	req := &waymarkv1.UpdateScheduleRequest{Namespace: c.namespace, ScheduleId: schedule.GetId(), Schedule: schedule}
	if len(fields) > 0 {
		req.UpdateMask = &fieldmaskpb.FieldMask{}
		for _, f := range fields {
			req.UpdateMask.Paths = append(req.UpdateMask.Paths, string(f))
		}
	}
	res, err := c.Schedules.UpdateSchedule(ctx, req)
	return res.GetSchedule(), mapError(err)
}

// PauseSchedule pauses a schedule: it takes no ticks, and triggers and backfills wait until it
// is unpaused. note says why, and by whom (the schedule's Note).
func (c *Client) PauseSchedule(ctx context.Context, id, note string) (*waymarkv1.Schedule, error) {
	res, err := c.Schedules.PauseSchedule(ctx, &waymarkv1.PauseScheduleRequest{Namespace: c.namespace, ScheduleId: id, Note: note})
	return res.GetSchedule(), mapError(err)
}

// UnpauseSchedule unpauses a schedule; ticks that fell while it was paused are neither started
// nor caught up.
func (c *Client) UnpauseSchedule(ctx context.Context, id, note string) (*waymarkv1.Schedule, error) {
	res, err := c.Schedules.UnpauseSchedule(ctx, &waymarkv1.UnpauseScheduleRequest{Namespace: c.namespace, ScheduleId: id, Note: note})
	return res.GetSchedule(), mapError(err)
}

// TriggerSchedule queues one run now (scheduled at the current time), under overlap
// (SCHEDULE_OVERLAP_POLICY_UNSPECIFIED: the schedule's policy); the sweeper starts it within
// about a second, and Info.BufferedActions counts it until then. Sent once, after waiting for a
// connection: a repeat would queue a second run.
func (c *Client) TriggerSchedule(ctx context.Context, id string, overlap waymarkv1.ScheduleOverlapPolicy) (*waymarkv1.Schedule, error) {
	res, err := c.Schedules.TriggerSchedule(ctx, &waymarkv1.TriggerScheduleRequest{Namespace: c.namespace, ScheduleId: id, Overlap: overlap})
	return res.GetSchedule(), mapError(err)
}

// BackfillSchedule queues a run for every tick of the schedule in [start, end] (at most 1,000
// per call), outside the catch-up window too, under overlap (UNSPECIFIED: the schedule's); the
// response's Queued says how many. A scheduled time that already has its run is not run again,
// so it is retried like a read.
func (c *Client) BackfillSchedule(ctx context.Context, id string, start, end time.Time, overlap waymarkv1.ScheduleOverlapPolicy) (*waymarkv1.BackfillScheduleResponse, error) {
	res, err := c.Schedules.BackfillSchedule(ctx, &waymarkv1.BackfillScheduleRequest{
		Namespace: c.namespace, ScheduleId: id, StartTime: timestamppb.New(start), EndTime: timestamppb.New(end), Overlap: overlap,
	})
	return res, mapError(err)
}

// DeleteSchedule deletes a schedule; the runs it started are kept. An id the namespace does not
// have is *ScheduleNotFoundError, unless an earlier attempt of this call deleted it (a retry
// that answers SCHEDULE_NOT_FOUND is success).
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	_, err := c.Schedules.DeleteSchedule(ctx, &waymarkv1.DeleteScheduleRequest{Namespace: c.namespace, ScheduleId: id})
	return mapError(err)
}

// scheduleNotFound reports whether err (a status from the stub) is SCHEDULE_NOT_FOUND.
func scheduleNotFound(err error) bool {
	var missing *ScheduleNotFoundError
	return errors.As(mapError(err), &missing)
}
