package waymark

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// scriptedRuns answers StreamRunEvents from a script: call i sends script[i].events (after
// checking the after_seq it was given), then ends with script[i].end, or blocks until the
// connection goes away when end is nil and hang is set.
type scriptedRuns struct {
	waymarkv1.UnimplementedRunServiceServer
	mu     sync.Mutex
	calls  []*int64
	large  []bool // include_large_payloads of each call
	script []streamStep
}

type streamStep struct {
	events []int64
	last   waymarkv1.RunStatus // status change carried by the final event, if any
	end    error
	hang   bool
}

func (s *scriptedRuns) StreamRunEvents(req *waymarkv1.StreamRunEventsRequest, stream grpc.ServerStreamingServer[waymarkv1.StreamRunEventsResponse]) error {
	s.mu.Lock()
	call := len(s.calls)
	s.calls = append(s.calls, req.AfterSeq)
	s.large = append(s.large, req.IncludeLargePayloads)
	step := s.script[call]
	s.mu.Unlock()
	for i, seq := range step.events {
		ev := &waymarkv1.RunEvent{RunId: req.RunId, Seq: seq, Body: &waymarkv1.RunEvent_Entry{Entry: &waymarkv1.JournalEntry{Seq: seq, Kind: "step"}}}
		if i == len(step.events)-1 && step.last != waymarkv1.RunStatus_RUN_STATUS_UNSPECIFIED {
			ev.Body = &waymarkv1.RunEvent_StatusChanged{StatusChanged: &waymarkv1.RunStatusChange{Status: step.last}}
		}
		if err := stream.Send(&waymarkv1.StreamRunEventsResponse{Event: ev}); err != nil {
			return err
		}
	}
	if step.hang {
		<-stream.Context().Done()
		return stream.Context().Err()
	}
	return step.end
}

// serve starts a gRPC server with runs on addr ("127.0.0.1:0" for any port).
func serve(t *testing.T, addr string, runs *scriptedRuns) (*grpc.Server, string) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	waymarkv1.RegisterRunServiceServer(srv, runs)
	go func() { _ = srv.Serve(lis) }()
	return srv, lis.Addr().String()
}

// The stream survives an UNAVAILABLE answer and a server that disappears mid-stream: it resumes
// after the last seq it delivered, drops the event the server repeats, and delivers each seq once.
func TestEventsReconnectAndResumeFromLastSeq(t *testing.T) {
	runs := &scriptedRuns{script: []streamStep{
		{events: []int64{0, 1, 2}, end: status.Error(codes.Unavailable, "server shutting down")},
		{events: []int64{2, 3}, hang: true},
		{events: []int64{4}, last: waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED},
	}}
	srv, addr := serve(t, "127.0.0.1:0", runs)
	client := dialFast(t, addr, 30*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var seen []int64
	var reconnects []int64
	opts := EventsOptions{FollowSuspended: true, OnReconnect: func(r Reconnect) { reconnects = append(reconnects, r.AfterSeq) }}
	for ev, err := range client.Events(ctx, "run-1", opts) {
		if err != nil {
			t.Fatalf("after %v: %v", seen, err)
		}
		seen = append(seen, ev.GetSeq())
		if ev.GetSeq() == 3 {
			// The connection drops mid-stream: the server goes away and a new one takes its address.
			srv.Stop()
			srv, _ = serve(t, addr, runs)
		}
	}
	srv.Stop()
	if want := []int64{0, 1, 2, 3, 4}; !slices.Equal(seen, want) {
		t.Fatalf("seen %v, want %v", seen, want)
	}
	if len(reconnects) < 2 || reconnects[0] != 2 || reconnects[len(reconnects)-1] != 3 {
		t.Fatalf("reconnects after %v, want after 2 then 3", reconnects)
	}
	if runs.calls[0] != nil || *runs.calls[1] != 2 || *runs.calls[len(runs.calls)-1] != 3 {
		t.Fatalf("after_seq sent %v", runs.calls)
	}
	if slices.Contains(runs.large, true) {
		t.Fatalf("include_large_payloads sent %v without the option", runs.large)
	}
}

// IncludeLargePayloads goes out on every connection of the stream, reconnects included.
func TestEventsIncludeLargePayloadsOnEveryConnection(t *testing.T) {
	runs := &scriptedRuns{script: []streamStep{
		{events: []int64{0, 1}, end: status.Error(codes.Unavailable, "server shutting down")},
		{events: []int64{2}, last: waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED},
	}}
	srv, addr := serve(t, "127.0.0.1:0", runs)
	defer srv.Stop()
	client := dialFast(t, addr, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var seen []int64
	for ev, err := range client.Events(ctx, "run-1", EventsOptions{IncludeLargePayloads: true}) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev.GetSeq())
	}
	if want := []int64{0, 1, 2}; !slices.Equal(seen, want) {
		t.Fatalf("seen %v, want %v", seen, want)
	}
	if want := []bool{true, true}; !slices.Equal(runs.large, want) {
		t.Fatalf("include_large_payloads sent %v, want %v", runs.large, want)
	}
}

// A stream that fails for a reason other than availability ends the loop with the typed error.
func TestEventsStopOnOtherErrors(t *testing.T) {
	runs := &scriptedRuns{script: []streamStep{{end: status.Error(codes.NotFound, "no such run")}}}
	srv, addr := serve(t, "127.0.0.1:0", runs)
	defer srv.Stop()
	client, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var got error
	for _, err := range client.Events(context.Background(), "run-x", EventsOptions{}) {
		got = err
	}
	if status.Code(got) != codes.NotFound || len(runs.calls) != 1 {
		t.Fatalf("want one call ending NOT_FOUND, got %v after %d calls", got, len(runs.calls))
	}
}

// A follower of a parked run gets no events between restarts, so only a successful reconnect
// can tell it that the server is back: two restarts farther apart than GiveUpAfter, each over
// well within it, must not end the stream (they did while only events reset the give-up clock).
func TestEventsSurviveRestartsFartherApartThanGiveUp(t *testing.T) {
	const giveUp = 600 * time.Millisecond
	runs := &scriptedRuns{script: []streamStep{
		{events: []int64{0, 1}, hang: true},
		{hang: true}, // parked: the reconnect delivers nothing
		{events: []int64{2, 3}, last: waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED},
	}}
	srv, addr := serve(t, "127.0.0.1:0", runs)
	client := dialFast(t, addr, giveUp)
	calls := func() int {
		runs.mu.Lock()
		defer runs.mu.Unlock()
		return len(runs.calls)
	}
	waitCalls := func(n int) {
		for deadline := time.Now().Add(20 * time.Second); calls() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("the stream never reconnected (%d calls)", calls())
				return
			}
		}
	}
	restart := func() {
		srv.Stop()
		time.Sleep(giveUp / 6) // the outage, shorter than the give-up window
		srv, _ = serve(t, addr, runs)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var reconnects int
	seen := []int64{}
	done := make(chan error, 1)
	go func() {
		opts := EventsOptions{FollowSuspended: true, OnReconnect: func(Reconnect) { mu.Lock(); reconnects++; mu.Unlock() }}
		for ev, err := range client.Events(ctx, "run-1", opts) {
			if err != nil {
				done <- err
				return
			}
			mu.Lock()
			seen = append(seen, ev.GetSeq())
			mu.Unlock()
		}
		done <- nil
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break // the history arrived: the run is parked
		}
	}
	restart()
	waitCalls(2)
	time.Sleep(giveUp + giveUp/2) // longer than the window with no event
	restart()
	if err := <-done; err != nil {
		t.Fatalf("the stream gave up after %v: %v", seen, err)
	}
	srv.Stop()
	if !slices.Equal(seen, []int64{0, 1, 2, 3}) || reconnects < 2 {
		t.Fatalf("seen %v after %d reconnects, want [0 1 2 3] after at least 2", seen, reconnects)
	}
}
