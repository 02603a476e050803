package waymark

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// deltaRuns answers StreamRunEvents with deltas from a script: connection i sends script[i]
// and ends with UNAVAILABLE, the last one ends cleanly. It records each request.
type deltaRuns struct {
	waymarkv1.UnimplementedRunServiceServer
	mu       sync.Mutex
	requests []*waymarkv1.StreamRunEventsRequest
	script   [][]*waymarkv1.RunEvent
}

func (s *deltaRuns) StreamRunEvents(req *waymarkv1.StreamRunEventsRequest, stream grpc.ServerStreamingServer[waymarkv1.StreamRunEventsResponse]) error {
	s.mu.Lock()
	call := len(s.requests)
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	for _, ev := range s.script[call] {
		if err := stream.Send(&waymarkv1.StreamRunEventsResponse{Event: ev}); err != nil {
			return err
		}
	}
	if call < len(s.script)-1 {
		return status.Error(codes.Unavailable, "the replica died")
	}
	return nil
}

// GetRun answers the reconnect's probe.
func (s *deltaRuns) GetRun(_ context.Context, req *waymarkv1.GetRunRequest) (*waymarkv1.GetRunResponse, error) {
	return &waymarkv1.GetRunResponse{Run: &waymarkv1.Run{Id: req.GetRunId()}}, nil
}

func entryEvent(seq int64, kind string, st waymarkv1.EntryStatus, ref *int64, payload map[string]any) *waymarkv1.RunEvent {
	value, _ := structpb.NewValue(payload)
	return &waymarkv1.RunEvent{RunId: "run-1", Seq: seq, Body: &waymarkv1.RunEvent_Entry{Entry: &waymarkv1.JournalEntry{Seq: seq, Kind: kind, Status: st, RefSeq: ref, Payload: value}}}
}

func deltaEvent(offset, attempt int64, index int32, text string) *waymarkv1.RunEvent {
	kind := waymarkv1.ModelDeltaKind_MODEL_DELTA_KIND_TEXT
	if index == 0 {
		kind = waymarkv1.ModelDeltaKind_MODEL_DELTA_KIND_ATTEMPT_START
	}
	return &waymarkv1.RunEvent{RunId: "run-1", Seq: 1, Body: &waymarkv1.RunEvent_ModelDelta{ModelDelta: &waymarkv1.ModelDelta{
		Offset: offset, CallSeq: 1, Attempt: attempt, Index: index, Kind: kind, Text: text}}}
}

// A token stream through a dropped connection: it resumes after the last seq and delta offset it
// delivered (so a delta the server repeats is not delivered twice), marks the newer attempt as
// superseding the aborted one, drops a late delta of the aborted attempt, and ends with the
// journaled result. Deltas carry their call's seq, which Events' seq cursor alone would drop.
func TestTokensResumeAfterTheLastOffsetAndTellAttemptsApart(t *testing.T) {
	one := int64(1)
	runs := &deltaRuns{script: [][]*waymarkv1.RunEvent{
		{
			entryEvent(0, "status", waymarkv1.EntryStatus_ENTRY_STATUS_INFO, nil, nil),
			entryEvent(1, "model", waymarkv1.EntryStatus_ENTRY_STATUS_RUNNING, nil, nil),
			deltaEvent(0, 3, 0, ""), deltaEvent(1, 3, 1, "Hel"), deltaEvent(2, 3, 2, "lo"),
		},
		{
			deltaEvent(2, 3, 2, "lo"), // already delivered
			deltaEvent(3, 4, 0, ""), deltaEvent(4, 4, 1, "Hello"), deltaEvent(5, 3, 3, " there"), deltaEvent(6, 4, 2, ", world"),
			entryEvent(2, "model", waymarkv1.EntryStatus_ENTRY_STATUS_OK, &one, map[string]any{"text": "Hello, world"}),
			{RunId: "run-1", Seq: 3, Body: &waymarkv1.RunEvent_StatusChanged{StatusChanged: &waymarkv1.RunStatusChange{Status: waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED}}},
		},
	}}
	addr := serveGRPC(t, func(srv *grpc.Server) { waymarkv1.RegisterRunServiceServer(srv, runs) })
	client := dialFast(t, addr, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	var reconnects []Reconnect
	opts := TokensOptions{EventsOptions: EventsOptions{FollowSuspended: true, OnReconnect: func(r Reconnect) { reconnects = append(reconnects, r) }}}
	for tok, err := range client.Tokens(ctx, "run-1", opts) {
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, fmt.Sprintf("%s call=%d attempt=%d supersedes=%d index=%d offset=%d %q", tok.Kind, tok.CallSeq, tok.Attempt, tok.Supersedes, tok.Index, tok.Offset, tok.Text))
	}
	want := []string{
		`attempt call=1 attempt=3 supersedes=-1 index=0 offset=0 ""`,
		`text call=1 attempt=3 supersedes=-1 index=1 offset=1 "Hel"`,
		`text call=1 attempt=3 supersedes=-1 index=2 offset=2 "lo"`,
		`attempt call=1 attempt=4 supersedes=3 index=0 offset=0 ""`,
		`text call=1 attempt=4 supersedes=-1 index=1 offset=4 "Hello"`,
		`text call=1 attempt=4 supersedes=-1 index=2 offset=6 ", world"`,
		`result call=1 attempt=4 supersedes=-1 index=0 offset=0 "Hello, world"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tokens:\n%v\nwant:\n%v", got, want)
	}
	if len(runs.requests) != 2 || len(reconnects) != 1 || reconnects[0].AfterSeq != 1 || reconnects[0].AfterOffset != 2 {
		t.Fatalf("%d streams, reconnects %+v", len(runs.requests), reconnects)
	}
	first, second := runs.requests[0], runs.requests[1]
	if !first.GetIncludeDeltas() || first.AfterDeltaOffset != nil || first.AfterSeq != nil || !first.GetFollowSuspended() {
		t.Fatalf("first stream asked %v", first)
	}
	if !second.GetIncludeDeltas() || second.GetAfterDeltaOffset() != 2 || second.GetAfterSeq() != 1 {
		t.Fatalf("the reconnect asked %v", second)
	}
}

// A new stream starts after the offset and seq given; Events asks for no deltas and yields none.
func TestTokensStartAfterAnOffsetAndEventsSendNoDeltas(t *testing.T) {
	one := int64(1)
	final := []*waymarkv1.RunEvent{
		deltaEvent(4, 4, 1, "Hello"), // its attempt's start came before this stream
		entryEvent(2, "model", waymarkv1.EntryStatus_ENTRY_STATUS_OK, &one, map[string]any{"text": "Hello"}),
	}
	runs := &deltaRuns{script: [][]*waymarkv1.RunEvent{final}}
	addr := serveGRPC(t, func(srv *grpc.Server) { waymarkv1.RegisterRunServiceServer(srv, runs) })
	client := dialTest(t, addr)
	after, offset := int64(1), int64(3)
	var kinds []TokenKind
	for tok, err := range client.Tokens(context.Background(), "run-1", TokensOptions{EventsOptions: EventsOptions{AfterSeq: &after}, AfterOffset: &offset}) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, tok.Kind)
	}
	if !slices.Equal(kinds, []TokenKind{TokenAttempt, TokenText, TokenResult}) {
		t.Fatalf("tokens %v", kinds)
	}
	if req := runs.requests[0]; req.GetAfterSeq() != 1 || req.GetAfterDeltaOffset() != 3 || !req.GetIncludeDeltas() {
		t.Fatalf("asked %v", req)
	}
	events := &deltaRuns{script: [][]*waymarkv1.RunEvent{final}}
	plain := dialTest(t, serveGRPC(t, func(srv *grpc.Server) { waymarkv1.RegisterRunServiceServer(srv, events) }))
	var seqs []int64
	for ev, err := range plain.Events(context.Background(), "run-1", EventsOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.GetSeq())
	}
	if !slices.Equal(seqs, []int64{2}) || events.requests[0].GetIncludeDeltas() {
		t.Fatalf("events %v, asked %v", seqs, events.requests[0])
	}
}
