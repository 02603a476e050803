package waymark

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
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
	// OnReconnect, when set, is called before each reconnect with the seq the stream resumes
	// after (-1 when no event arrived yet) and the error that ended the previous stream (an
	// *UnavailableError).
	OnReconnect func(afterSeq int64, cause error)
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
	return func(yield func(*waymarkv1.RunEvent, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		last := int64(-1)
		if opts.AfterSeq != nil {
			last = *opts.AfterSeq
		}
		ceiling := c.backoff.Initial
		// The give-up clock: since when neither a connect succeeded nor an event arrived.
		quietSince := time.Now()
		for {
			began := time.Now()
			res := c.follow(ctx, runID, opts, &last, yield)
			if res.ended {
				return
			}
			if res.connected || res.progressed {
				quietSince = time.Now()
			}
			// A stream that delivered or held for a while starts its backoff over; one the server
			// keeps refusing at once backs off further.
			if res.progressed || time.Since(began) > c.backoff.Max {
				ceiling = c.backoff.Initial
			}
			if res.err == nil {
				return // the server ended the stream: the run ended (or parked)
			}
			if !reconnectable(res.err) {
				yield(nil, mapError(res.err))
				return
			}
			wait := fullJitter(ceiling)
			if c.backoff.GiveUpAfter > 0 && time.Since(quietSince)+wait > c.backoff.GiveUpAfter {
				yield(nil, mapError(res.err))
				return
			}
			if opts.OnReconnect != nil {
				opts.OnReconnect(last, mapError(res.err))
			}
			if !sleep(ctx, wait) {
				yield(nil, ctx.Err())
				return
			}
			ceiling = min(ceiling*2, c.backoff.Max)
		}
	}
}

// followed is how one stream went: ended when iteration is over (the consumer stopped, or an
// error was already yielded); connected when the server accepted the stream (grpc-go opens a
// stream only on a connection that is READY, so a server that is down fails it at once);
// progressed when at least one new event arrived; err what ended the stream otherwise (nil when
// the server ended it, which it does once the run has settled).
type followed struct {
	ended, connected, progressed bool
	err                          error
}

// follow runs one stream.
func (c *Client) follow(ctx context.Context, runID string, opts EventsOptions, last *int64, yield func(*waymarkv1.RunEvent, error) bool) (res followed) {
	req := &waymarkv1.StreamRunEventsRequest{Namespace: c.namespace, RunId: runID, FollowSuspended: opts.FollowSuspended}
	if *last >= 0 {
		after := *last
		req.AfterSeq = &after
	}
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Runs.StreamRunEvents(streamCtx, req)
	if err != nil {
		res.err = err
		return res
	}
	res.connected = true
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
		if ev.GetSeq() <= *last {
			continue // already delivered before a reconnect
		}
		*last = ev.GetSeq()
		res.progressed = true
		if !yield(ev, nil) {
			res.ended = true
			return res
		}
	}
}

// reconnectable: the server went away or is restarting. grpc-go reports a dropped connection, a
// refused one and a server draining its streams alike as UNAVAILABLE.
func reconnectable(err error) bool {
	return status.Code(err) == codes.Unavailable
}
