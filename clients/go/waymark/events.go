package waymark

import (
	"context"
	"errors"
	"io"
	"iter"
	"math/rand/v2"
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
	// after (-1 when no event arrived yet) and the error that ended the previous stream.
	OnReconnect func(afterSeq int64, cause error)
}

// Events streams a run's events: its history, then live events until the run ends (or parks,
// without FollowSuspended); the server decides when, so a run that parked and was resumed
// streams on. When the connection drops or the server answers UNAVAILABLE (a
// restart, a rollout) it reconnects by itself with backoff, resuming after the last seq it
// delivered, so the loop sees every event exactly once and in seq order. Iteration ends with a
// non-nil error when the stream fails for another reason, when reconnecting keeps failing past
// the client's Backoff.GiveUpAfter, or when ctx ends; breaking out of the loop closes the stream.
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
		wait := c.backoff.Initial
		var failingSince time.Time
		for {
			ended, progressed, err := c.follow(ctx, runID, opts, &last, yield)
			if ended {
				return
			}
			if progressed {
				wait, failingSince = c.backoff.Initial, time.Time{}
			}
			if err != nil && !reconnectable(err) {
				yield(nil, mapError(err))
				return
			}
			if err == nil {
				return // the server ended the stream: the run ended (or parked)
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if c.backoff.GiveUpAfter > 0 && time.Since(failingSince) > c.backoff.GiveUpAfter {
				yield(nil, mapError(err))
				return
			}
			if opts.OnReconnect != nil {
				opts.OnReconnect(last, err)
			}
			if !sleep(ctx, jitter(wait)) {
				yield(nil, ctx.Err())
				return
			}
			wait = min(wait*2, c.backoff.Max)
		}
	}
}

// follow runs one stream. ended is true when iteration is over (the consumer stopped, or an
// error was already yielded); progressed when at least one new event arrived; err is what ended
// the stream otherwise (nil when the server ended it, which it does once the run has settled).
func (c *Client) follow(ctx context.Context, runID string, opts EventsOptions, last *int64, yield func(*waymarkv1.RunEvent, error) bool) (ended, progressed bool, err error) {
	req := &waymarkv1.StreamRunEventsRequest{Namespace: c.namespace, RunId: runID, FollowSuspended: opts.FollowSuspended}
	if *last >= 0 {
		after := *last
		req.AfterSeq = &after
	}
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Runs.StreamRunEvents(streamCtx, req)
	if err != nil {
		return false, false, err
	}
	for {
		res, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return false, progressed, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				return true, progressed, nil
			}
			return false, progressed, err
		}
		ev := res.GetEvent()
		if ev.GetSeq() <= *last {
			continue // already delivered before a reconnect
		}
		*last = ev.GetSeq()
		progressed = true
		if !yield(ev, nil) {
			return true, progressed, nil
		}
	}
}

// reconnectable: the server went away or is restarting. grpc-go reports a dropped connection, a
// refused one and a server draining its streams alike as UNAVAILABLE.
func reconnectable(err error) bool {
	return status.Code(err) == codes.Unavailable
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
