import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { RetryInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { RunStatus, type RunEvent } from '../../src/gen/waymark/v1/run_pb.js';
import { serverShutdownError } from '../../src/server/transport/shutdown-signal.js';
import { apiHarness, detail, failure, json, plain, shapeOf, type ApiHarness } from './api-harness.js';

/** A short description of an event: `3 status SUSPENDED`, `4 signal resolved`. */
function describeEvent(e: RunEvent): string {
  if (e.body.case === 'statusChanged') return `${e.seq} status ${RunStatus[e.body.value.status]}`;
  if (e.body.case === 'modelDelta') return `${e.seq} delta ${e.body.value.offset}`;
  return `${e.seq} ${e.body.value?.kind} ${e.body.value?.name}`;
}

async function tick(t: ApiHarness, runId: string, n: number, id: string): Promise<void> {
  const res = await t.signals.sendSignal({ runId, name: 'tick', payload: json({ n }), signalId: id });
  expect(res.applied || res.buffered).toBe(true);
}

describe('StreamRunEvents', () => {
  it('streams the history, then live events as they are journaled, and ends after the terminal event', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'ticker', input: json({ ticks: 2 }), wait: true });
    const events: RunEvent[] = [];
    const stream = t.runs.streamRunEvents({ runId: run!.id, followSuspended: true });
    let ticked = 0;
    for await (const { event } of stream) {
      events.push(event!);
      // Each time the run parks, send the next tick: the stream stays open through suspensions.
      if (event!.body.case === 'statusChanged' && event!.body.value.status === RunStatus.SUSPENDED) {
        ticked++;
        await tick(t, run!.id, ticked * 10, `t${ticked}`);
      }
    }
    expect(events.map((e) => Number(e.seq))).toEqual(events.map((_, i) => i));
    const last = events[events.length - 1]!;
    expect(describeEvent(last)).toMatch(/status SUCCEEDED$/);
    expect(last.body.case === 'statusChanged' && plain(last.body.value.output)).toEqual({ total: 30 });
    expect(events.filter((e) => e.body.case === 'entry' && e.body.value.kind === 'emit')).toHaveLength(2);
    expect((await t.runs.getRun({ runId: run!.id })).run!.nextSeq).toBe(BigInt(events.length));
  });

  it('without follow_suspended ends after the event that parks the run; reconnecting there ends at once', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'ticker', input: json({ ticks: 3 }), wait: true });
    await tick(t, run!.id, 1, 'a');
    await t.executionEnded(run!.id, ['suspended']);
    const seen: string[] = [];
    for await (const { event } of t.runs.streamRunEvents({ runId: run!.id })) seen.push(describeEvent(event!));
    // History passes the first park (the run went on) and ends at the current one.
    expect(seen.filter((s) => s.endsWith('status SUSPENDED'))).toHaveLength(2);
    expect(seen[seen.length - 1]).toMatch(/status SUSPENDED$/);
    const again: string[] = [];
    for await (const { event } of t.runs.streamRunEvents({ runId: run!.id, afterSeq: BigInt(seen.length - 1) })) again.push(describeEvent(event!));
    expect(again).toEqual([]);
  });

  it('a client that reconnects with its last seq misses nothing and sees nothing twice', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'ticker', input: json({ ticks: 4 }), wait: true });
    const got: RunEvent[] = [];
    let sent = 0;
    const parked = (e: RunEvent) => e.body.case === 'statusChanged' && e.body.value.status === RunStatus.SUSPENDED;
    // First connection: tick at the first park, then drop at the second (the client goes away mid-run).
    for await (const { event } of t.runs.streamRunEvents({ runId: run!.id, followSuspended: true })) {
      got.push(event!);
      if (!parked(event!)) continue;
      if (sent === 1) break;
      await tick(t, run!.id, 1, `t${++sent}`);
    }
    // While nobody listens, the run moves on.
    const ended = t.executionEnded(run!.id);
    await tick(t, run!.id, 1, `t${++sent}`);
    await ended;
    // Reconnect from the last seq seen; tick at each park until all four were sent.
    for await (const { event } of t.runs.streamRunEvents({ runId: run!.id, afterSeq: got[got.length - 1]!.seq, followSuspended: true })) {
      got.push(event!);
      if (parked(event!) && sent < 4) await tick(t, run!.id, 1, `t${++sent}`);
    }
    expect(got.map((e) => Number(e.seq))).toEqual(got.map((_, i) => i));
    expect(describeEvent(got[got.length - 1]!)).toMatch(/status SUCCEEDED$/);
    expect(sent).toBe(4);
  });

  it('refuses a stream past the per-replica limit with RESOURCE_EXHAUSTED and RetryInfo, and frees the slot when one ends', async () => {
    const t = apiHarness({ streams: 1 });
    const { run } = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
    const controller = new AbortController();
    const open = t.runs.streamRunEvents({ runId: run!.id, followSuspended: true }, { signal: controller.signal })[Symbol.asyncIterator]();
    await open.next(); // the stream holds its slot
    const err = await failure(t.runs.streamRunEvents({ runId: run!.id, followSuspended: true }));
    expect(shapeOf(err)).toMatchObject({ code: Code.ResourceExhausted, reason: 'STREAM_LIMIT' });
    expect(detail(err, RetryInfoSchema)?.retryDelay).toBeDefined();
    controller.abort();
    await expect(open.next()).rejects.toMatchObject({ code: Code.Canceled });
    await expect.poll(() => t.deps.streams.open).toBe(0);
    const events = [];
    for await (const { event } of t.runs.streamRunEvents({ runId: run!.id })) events.push(event);
    expect(events.length).toBeGreaterThan(0);
  });

  it('ends with UNAVAILABLE, never OK, when the server shuts down', async () => {
    const shutdown = new AbortController();
    const t = apiHarness({ shutdownSignal: shutdown.signal });
    const { run } = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
    const it = t.runs.streamRunEvents({ runId: run!.id, followSuspended: true })[Symbol.asyncIterator]();
    await it.next();
    shutdown.abort(serverShutdownError());
    const err = await (async () => {
      for (;;) {
        try {
          const next = await it.next();
          if (next.done) return null;
        } catch (e) {
          return e;
        }
      }
    })();
    expect(err).toMatchObject({ code: Code.Unavailable });
  });

  it('refuses an unknown run, a malformed id and a bad after_seq', async () => {
    const t = apiHarness();
    expect(shapeOf(await failure(t.runs.streamRunEvents({ runId: '018f0000-0000-7000-8000-000000000000' }))))
      .toMatchObject({ code: Code.NotFound, reason: 'RUN_NOT_FOUND' });
    expect(shapeOf(await failure(t.runs.streamRunEvents({ runId: 'x', afterSeq: -2n }))).fields).toEqual(['run_id', 'after_seq']);
    expect(t.deps.streams.open).toBe(0);
  });
});
