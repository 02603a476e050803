package waymark

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// scheduleServer answers ScheduleService with the next error of its script, then success: the
// schedule it was sent (or one of the id asked for), and two pages of ListSchedules.
type scheduleServer struct {
	waymarkv1.UnimplementedScheduleServiceServer
	errorScript
}

func stored(id string) *waymarkv1.Schedule { return &waymarkv1.Schedule{Namespace: "payments", Id: id} }

func (s *scheduleServer) CreateSchedule(_ context.Context, req *waymarkv1.CreateScheduleRequest) (*waymarkv1.CreateScheduleResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.CreateScheduleResponse{Schedule: req.GetSchedule()}, nil
}

func (s *scheduleServer) GetSchedule(_ context.Context, req *waymarkv1.GetScheduleRequest) (*waymarkv1.GetScheduleResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.GetScheduleResponse{Schedule: stored(req.GetScheduleId())}, nil
}

func (s *scheduleServer) ListSchedules(_ context.Context, req *waymarkv1.ListSchedulesRequest) (*waymarkv1.ListSchedulesResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	if req.GetPageToken() == "" {
		return &waymarkv1.ListSchedulesResponse{Schedules: []*waymarkv1.Schedule{stored("archive")}, NextPageToken: "after-archive"}, nil
	}
	return &waymarkv1.ListSchedulesResponse{Schedules: []*waymarkv1.Schedule{stored("reports")}}, nil
}

func (s *scheduleServer) UpdateSchedule(_ context.Context, req *waymarkv1.UpdateScheduleRequest) (*waymarkv1.UpdateScheduleResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.UpdateScheduleResponse{Schedule: req.GetSchedule()}, nil
}

func (s *scheduleServer) PauseSchedule(_ context.Context, req *waymarkv1.PauseScheduleRequest) (*waymarkv1.PauseScheduleResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.PauseScheduleResponse{Schedule: &waymarkv1.Schedule{Id: req.GetScheduleId(), Paused: true, Note: req.GetNote()}}, nil
}

func (s *scheduleServer) UnpauseSchedule(_ context.Context, req *waymarkv1.UnpauseScheduleRequest) (*waymarkv1.UnpauseScheduleResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.UnpauseScheduleResponse{Schedule: &waymarkv1.Schedule{Id: req.GetScheduleId(), Note: req.GetNote()}}, nil
}

func (s *scheduleServer) TriggerSchedule(_ context.Context, req *waymarkv1.TriggerScheduleRequest) (*waymarkv1.TriggerScheduleResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.TriggerScheduleResponse{Schedule: &waymarkv1.Schedule{Id: req.GetScheduleId(), Info: &waymarkv1.ScheduleInfo{BufferedActions: 1}}}, nil
}

func (s *scheduleServer) BackfillSchedule(_ context.Context, req *waymarkv1.BackfillScheduleRequest) (*waymarkv1.BackfillScheduleResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.BackfillScheduleResponse{Schedule: stored(req.GetScheduleId()), Queued: 3}, nil
}

func (s *scheduleServer) DeleteSchedule(_ context.Context, req *waymarkv1.DeleteScheduleRequest) (*waymarkv1.DeleteScheduleResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	return &waymarkv1.DeleteScheduleResponse{}, nil
}

func serveSchedules(t *testing.T, s *scheduleServer) string {
	return serveGRPC(t, func(srv *grpc.Server) { waymarkv1.RegisterScheduleServiceServer(srv, s) })
}

func scheduleStatus(code codes.Code, reason, id string) error {
	st, _ := status.New(code, "scripted").WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "waymark", Metadata: map[string]string{"schedule_id": id}})
	return st.Err()
}

var restarting = status.Error(codes.Unavailable, "restarting")

// Every call carries the client's namespace and its own arguments; reads, updates, pauses,
// backfills and deletes ride through UNAVAILABLE, while a create and a trigger are sent once (a
// repeat of an applied one would answer SCHEDULE_EXISTS, or queue a second run).
func TestScheduleCallsCarryTheNamespaceAndRetryOnlyWhatIsSafe(t *testing.T) {
	ctx := context.Background()
	s := &scheduleServer{}
	client := dialTest(t, serveSchedules(t, s), WithNamespace("payments"))
	last := func() any { s.mu.Lock(); defer s.mu.Unlock(); return s.requests[len(s.requests)-1] }
	retried := func(what string, call func() error) {
		t.Helper()
		before := s.calls()
		s.script = []error{restarting, restarting}
		if err := call(); err != nil || s.calls()-before != 3 {
			t.Fatalf("%s: %v after %d attempts, want success after 3", what, err, s.calls()-before)
		}
	}
	sentOnce := func(what string, call func() error) {
		t.Helper()
		before := s.calls()
		s.script = []error{restarting}
		var unavailable *UnavailableError
		if err := call(); !errors.As(err, &unavailable) || s.calls()-before != 1 {
			t.Fatalf("%s: want the UNAVAILABLE of its one attempt, got %v after %d attempts", what, err, s.calls()-before)
		}
	}

	reports := &waymarkv1.Schedule{
		Id:       "reports",
		Spec:     &waymarkv1.ScheduleSpec{Cron: []string{"0 9 * * 1"}, TimeZone: "America/New_York"},
		Action:   &waymarkv1.ScheduleAction{Workflow: "echo-flow", Labels: map[string]string{"team": "a"}},
		Policies: &waymarkv1.SchedulePolicies{Overlap: waymarkv1.ScheduleOverlapPolicy_SCHEDULE_OVERLAP_POLICY_BUFFER_ALL, CatchupWindow: durationpb.New(2 * time.Minute)},
	}
	sentOnce("create", func() error { _, err := client.CreateSchedule(ctx, reports); return err })
	created, err := client.CreateSchedule(ctx, reports)
	if err != nil || !proto.Equal(created, reports) {
		t.Fatalf("create: %v %v", created, err)
	}
	if sent := last().(*waymarkv1.CreateScheduleRequest); sent.GetNamespace() != "payments" || !proto.Equal(sent.GetSchedule(), reports) {
		t.Fatalf("create sent %v", sent)
	}

	retried("get", func() error {
		got, err := client.GetSchedule(ctx, "reports")
		if err == nil && got.GetId() != "reports" {
			t.Fatalf("get answered %v", got)
		}
		return err
	})
	if sent := last().(*waymarkv1.GetScheduleRequest); sent.GetNamespace() != "payments" || sent.GetScheduleId() != "reports" {
		t.Fatalf("get sent %v", sent)
	}

	s.script = []error{restarting}
	var ids []string
	for schedule, err := range client.ListSchedules(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, schedule.GetId())
	}
	if !slices.Equal(ids, []string{"archive", "reports"}) {
		t.Fatalf("list: %v", ids)
	}
	if sent := last().(*waymarkv1.ListSchedulesRequest); sent.GetNamespace() != "payments" || sent.GetPageSize() != 1 || sent.GetPageToken() != "after-archive" {
		t.Fatalf("the second page was asked with %v", sent)
	}

	moved := proto.Clone(reports).(*waymarkv1.Schedule)
	moved.Spec.TimeZone = "Asia/Tokyo"
	retried("update", func() error { _, err := client.UpdateSchedule(ctx, moved, ScheduleFieldSpec); return err })
	if sent := last().(*waymarkv1.UpdateScheduleRequest); sent.GetNamespace() != "payments" || sent.GetScheduleId() != "reports" ||
		!slices.Equal(sent.GetUpdateMask().GetPaths(), []string{"spec"}) || sent.GetSchedule().GetSpec().GetTimeZone() != "Asia/Tokyo" {
		t.Fatalf("update sent %v", sent)
	}
	if _, err := client.UpdateSchedule(ctx, moved); err != nil || last().(*waymarkv1.UpdateScheduleRequest).GetUpdateMask() != nil {
		t.Fatalf("an update naming no field sends no mask (the whole schedule): %v %v", last(), err)
	}

	retried("pause", func() error { _, err := client.PauseSchedule(ctx, "reports", "holiday"); return err })
	if sent := last().(*waymarkv1.PauseScheduleRequest); sent.GetNamespace() != "payments" || sent.GetNote() != "holiday" {
		t.Fatalf("pause sent %v", sent)
	}
	retried("unpause", func() error { _, err := client.UnpauseSchedule(ctx, "reports", "back"); return err })
	if sent := last().(*waymarkv1.UnpauseScheduleRequest); sent.GetNamespace() != "payments" || sent.GetNote() != "back" {
		t.Fatalf("unpause sent %v", sent)
	}

	allowAll := waymarkv1.ScheduleOverlapPolicy_SCHEDULE_OVERLAP_POLICY_ALLOW_ALL
	sentOnce("trigger", func() error { _, err := client.TriggerSchedule(ctx, "reports", allowAll); return err })
	triggered, err := client.TriggerSchedule(ctx, "reports", allowAll)
	if err != nil || triggered.GetInfo().GetBufferedActions() != 1 || last().(*waymarkv1.TriggerScheduleRequest).GetOverlap() != allowAll {
		t.Fatalf("trigger: %v %v", triggered, err)
	}

	start, end := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 16, 23, 59, 59, 0, time.UTC)
	retried("backfill", func() error {
		res, err := client.BackfillSchedule(ctx, "reports", start, end, allowAll)
		if err == nil && res.GetQueued() != 3 {
			t.Fatalf("backfill answered %v", res)
		}
		return err
	})
	if sent := last().(*waymarkv1.BackfillScheduleRequest); sent.GetNamespace() != "payments" || !sent.GetStartTime().AsTime().Equal(start) ||
		!sent.GetEndTime().AsTime().Equal(end) || sent.GetOverlap() != allowAll {
		t.Fatalf("backfill sent %v", sent)
	}

	retried("delete", func() error { return client.DeleteSchedule(ctx, "reports") })
	if sent := last().(*waymarkv1.DeleteScheduleRequest); sent.GetNamespace() != "payments" || sent.GetScheduleId() != "reports" {
		t.Fatalf("delete sent %v", sent)
	}
	if _, err := client.CreateSchedule(ctx, nil); err == nil {
		t.Fatal("a nil schedule must fail before the call")
	}
}

// A delete whose first attempt was applied but whose answer was lost: the retry answers
// SCHEDULE_NOT_FOUND, which is success. A delete that finds nothing on its first attempt is
// *ScheduleNotFoundError; a create of a taken id *ScheduleExistsError.
func TestScheduleErrorsAreTypedAndARetriedDeleteThatFindsNothingSucceeded(t *testing.T) {
	ctx := context.Background()
	s := &scheduleServer{errorScript: errorScript{script: []error{restarting, scheduleStatus(codes.NotFound, ReasonScheduleNotFound, "reports")}}}
	client := dialTest(t, serveSchedules(t, s))
	if err := client.DeleteSchedule(ctx, "reports"); err != nil || s.calls() != 2 {
		t.Fatalf("a retried delete answering SCHEDULE_NOT_FOUND: %v after %d attempts, want success after 2", err, s.calls())
	}

	s.script = []error{scheduleStatus(codes.NotFound, ReasonScheduleNotFound, "reports")}
	var missing *ScheduleNotFoundError
	if err := client.DeleteSchedule(ctx, "reports"); !errors.As(err, &missing) || missing.ScheduleID != "reports" || missing.Code != codes.NotFound {
		t.Fatalf("want ScheduleNotFoundError, got %#v", err)
	}
	s.script = []error{scheduleStatus(codes.NotFound, ReasonScheduleNotFound, "nope")}
	if _, err := client.GetSchedule(ctx, "nope"); !errors.As(err, &missing) || missing.ScheduleID != "nope" {
		t.Fatalf("want ScheduleNotFoundError from get, got %#v", err)
	}
	s.script = []error{scheduleStatus(codes.AlreadyExists, ReasonScheduleExists, "reports")}
	var exists *ScheduleExistsError
	if _, err := client.CreateSchedule(ctx, stored("reports")); !errors.As(err, &exists) || exists.ScheduleID != "reports" || exists.Code != codes.AlreadyExists {
		t.Fatalf("want ScheduleExistsError, got %#v", err)
	}
}
