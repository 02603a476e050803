package waymark

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/internal/wait"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// EventsOptions select and shape an event stream.
type EventsOptions struct {
	// AfterSeq starts after this seq (the last one a previous stream delivered); nil starts at
	// the run's first event.
	AfterSeq *int64
	// FollowSuspended keeps the stream open while the run is parked, until it ends. Without it
	// the stream also ends after the event that parks the run.
	FollowSuspended bool
	// IncludeLargePayloads sends payloads stored out of line (over the server's 64 KiB
	// threshold) in the events; without it such an entry carries PayloadRef instead.
	IncludeLargePayloads bool
	// OnReconnect, when set, is called before each reconnect.
	OnReconnect func(Reconnect)
}

// Reconnect describes one reconnect of an event stream, for EventsOptions.OnReconnect.
type Reconnect struct {
	// Attempt counts the reconnects since the stream last succeeded (an event arrived or a
	// reconnect was answered), from 1.
	Attempt int
	// AfterSeq is the seq the stream resumes after: the last one delivered, -1 when none yet.
	AfterSeq int64
	// AfterOffset is the model delta offset a token stream (Tokens) resumes after: the last one
	// delivered, -1 when none yet (always -1 for Events).
	AfterOffset int64
	// Err is what ended the previous connection (an *UnavailableError for a dropped one).
	Err error
}

// Events streams a run's events: its history, then live events until the run ends (or parks,
// without FollowSuspended); the server decides when, so a run that parked and was resumed
// streams on. When the connection drops or the server answers UNAVAILABLE (a
// restart, a rollout) it reconnects by itself with backoff, resuming after the last seq it
// delivered, so the loop sees every event exactly once and in seq order. Iteration ends with a
// non-nil error when the stream fails for another reason, when for the client's
// Backoff.GiveUpAfter no reconnect succeeded and no event arrived (*UnavailableError), or when ctx
// ends; breaking out of the loop closes the stream.
//
//	for ev, err := range client.Events(ctx, runID, waymark.EventsOptions{FollowSuspended: true}) {
//		if err != nil { return err }
//		fmt.Println(ev.GetSeq(), ev.GetStatusChanged().GetStatus())
//	}
func (c *Client) Events(ctx context.Context, runID string, opts EventsOptions) iter.Seq2[*waymarkv1.RunEvent, error] {
	return c.followEvents(ctx, runID, opts, false, nil)
}

// cursor is where a stream resumes: the last seq and, for a stream with deltas, the last delta
// offset it delivered (-1: none yet).
type cursor struct {
	seq, offset int64
	deltas      bool
}

// followEvents is Events, and with deltas the same stream with model call deltas (Tokens),
// resumed after afterOffset too.
func (c *Client) followEvents(ctx context.Context, runID string, opts EventsOptions, deltas bool, afterOffset *int64) iter.Seq2[*waymarkv1.RunEvent, error] {
	return func(yield func(*waymarkv1.RunEvent, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		last := cursor{seq: -1, offset: -1, deltas: deltas}
		if opts.AfterSeq != nil {
			last.seq = *opts.AfterSeq
		}
		if afterOffset != nil {
			last.offset = *afterOffset
		}
		ceiling := c.backoff.Initial
		attempt := 0
		// The give-up clock: when the current run of failures began (zero: none since the last
		// success, an event or a reconnect the server answered).
		var failingSince time.Time
		probe := false // whether the next connect is a reconnect, to be confirmed by a GetRun
		for {
			var res followed
			if probe && !c.answers(ctx, runID) {
				res.err = status.Error(codes.Unavailable, "the server did not answer the reconnect")
			} else {
				if probe {
					failingSince, ceiling, attempt = time.Time{}, c.backoff.Initial, 0
				}
				res = c.follow(ctx, runID, opts, &last, yield)
			}
			if res.ended {
				return
			}
			if res.progressed {
				failingSince, ceiling, attempt = time.Time{}, c.backoff.Initial, 0
			}
			if res.err == nil {
				return // the server ended the stream: the run ended (or parked)
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			least, retryable := retryAfter(res.err)
			if !retryable {
				yield(nil, mapError(res.err))
				return
			}
			delay := max(fullJitter(ceiling), least)
			if c.backoff.GiveUpAfter > 0 && time.Since(failingSince)+delay > c.backoff.GiveUpAfter {
				yield(nil, mapError(res.err))
				return
			}
			attempt++
			if opts.OnReconnect != nil {
				opts.OnReconnect(Reconnect{Attempt: attempt, AfterSeq: last.seq, AfterOffset: last.offset, Err: mapError(res.err)})
			}
			if !wait.Sleep(ctx, delay) {
				yield(nil, ctx.Err())
				return
			}
			ceiling = min(ceiling*2, c.backoff.Max)
			probe = true
		}
	}
}

// answers reports whether the server answers a GetRun of the run: how a reconnect is known to
// have succeeded, since a follow stream of a parked run sends nothing and the server sends its
// response headers only with the first message. One attempt, no retries (the stream's backoff
// paces it); an answer other than UNAVAILABLE counts, the stream then reports it itself.
func (c *Client) answers(ctx context.Context, runID string) bool {
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, noRetry{}, true), min(c.timeout, 10*time.Second))
	defer cancel()
	_, err := c.Runs.GetRun(ctx, &waymarkv1.GetRunRequest{Namespace: c.namespace, RunId: runID})
	_, retryable := retryAfter(err)
	return err == nil || !retryable && status.Code(err) != codes.DeadlineExceeded
}

// followed is how one stream went: ended when iteration is over (the consumer stopped, or an
// error was already yielded); progressed when at least one new event arrived; err what ended the
// stream otherwise (nil when the server ended it, which it does once the run has settled).
type followed struct {
	ended, progressed bool
	err               error
}

// follow runs one stream.
func (c *Client) follow(ctx context.Context, runID string, opts EventsOptions, last *cursor, yield func(*waymarkv1.RunEvent, error) bool) (res followed) {
	req := &waymarkv1.StreamRunEventsRequest{Namespace: c.namespace, RunId: runID, FollowSuspended: opts.FollowSuspended, IncludeLargePayloads: opts.IncludeLargePayloads, IncludeDeltas: last.deltas}
	if last.seq >= 0 {
		after := last.seq
		req.AfterSeq = &after
	}
	if last.deltas && last.offset >= 0 {
		after := last.offset
		req.AfterDeltaOffset = &after
	}
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Runs.StreamRunEvents(streamCtx, req)
	if err != nil {
		res.err = err
		return res
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return res
		}
		if err != nil {
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				res.ended = true
				return res
			}
			res.err = err
			return res
		}
		ev := msg.GetEvent()
		if d := ev.GetModelDelta(); d != nil {
			// A delta carries its call's seq, already delivered: its own cursor is the offset.
			if !last.deltas || d.GetOffset() <= last.offset {
				continue // already delivered before a reconnect
			}
			last.offset = d.GetOffset()
		} else {
			if ev.GetSeq() <= last.seq {
				continue // already delivered before a reconnect
			}
			last.seq = ev.GetSeq()
		}
		res.progressed = true
		if !yield(ev, nil) {
			res.ended = true
			return res
		}
	}
}
