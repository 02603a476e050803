import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { apiHarness, detail, failure, json, shapeOf, snapshot } from './api-harness.js';

describe('SendSignal', () => {
  it('resolves the waiting signal and the receiving replica executes the run at once', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
    const ended = t.executionEnded(run!.id);
    const res = await t.signals.sendSignal({ runId: run!.id, name: 'go', payload: json({ n: 21 }), signalId: 's-1' });
    expect(res).toMatchObject({ applied: true, reason: '', buffered: false });
    expect(res.seq).toBeGreaterThan(0n);
    expect((await ended).run?.output).toBe(42);
    const dup = await t.signals.sendSignal({ runId: run!.id, name: 'go', payload: json({ n: 21 }), signalId: 's-1' });
    expect(dup).toMatchObject({ applied: false, reason: 'duplicate', seq: res.seq, buffered: false });
  });

  it('buffers a signal the run does not wait for yet; its wait receives it later', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'wait-signal', input: json({}) }); // PENDING: not waiting yet
    const res = await t.signals.sendSignal({ runId: run!.id, name: 'go', payload: json({ n: 5 }), signalId: 'early' });
    expect(res).toMatchObject({ applied: false, reason: 'buffered', buffered: true, seq: 0n });
    expect(await t.signals.sendSignal({ runId: run!.id, name: 'go', payload: json({ n: 5 }), signalId: 'early' }))
      .toMatchObject({ reason: 'duplicate', buffered: true });
    const [done] = await t.engine.runExecutePending();
    expect(done?.run?.output).toBe(10);
    const entries = (await t.runs.getJournal({ runId: run!.id })).entries;
    expect(entries.find((e) => e.dedupeKey === 'signal:early')).toMatchObject({ kind: 'signal', refSeq: 1n });
  });

  it('without a signal_id generates one (such a call is not idempotent)', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
    const res = await t.signals.sendSignal({ runId: run!.id, name: 'go', payload: json({ n: 1 }) });
    expect(res.applied).toBe(true);
    const entry = (await t.runs.getJournal({ runId: run!.id, afterSeq: res.seq - 1n, pageSize: 1 })).entries[0]!;
    expect(entry.dedupeKey).toMatch(/^signal:generated:/);
  });

  it('refuses a payload that fails the waiting schema, writing nothing', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
    const before = await snapshot(t.store);
    const err = await failure(t.signals.sendSignal({ runId: run!.id, name: 'go', payload: json({ n: 'many' }), signalId: 's' }));
    expect(shapeOf(err)).toEqual({ code: Code.InvalidArgument, reason: 'INVALID_RESOLUTION', fields: ['payload.n'] });
    expect(detail(err, ErrorInfoSchema)?.metadata.run_id).toBe(run!.id);
    expect(await snapshot(t.store)).toEqual(before);
    expect((await t.runs.getRun({ runId: run!.id })).run?.status).toBe(RunStatus.SUSPENDED);
  });

  it('refuses an unknown run, a finished run, malformed fields and an oversized payload', async () => {
    const t = apiHarness({ limits: { payloadBytes: 512 } });
    const { run } = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), wait: true });
    const before = await snapshot(t.store);
    expect(shapeOf(await failure(t.signals.sendSignal({ runId: '018f0000-0000-7000-8000-000000000000', name: 'go' }))))
      .toMatchObject({ code: Code.NotFound, reason: 'RUN_NOT_FOUND' });
    expect(shapeOf(await failure(t.signals.sendSignal({ runId: run!.id, name: 'go' })))).toMatchObject({ code: Code.FailedPrecondition, reason: 'WRONG_STATE' });
    expect(shapeOf(await failure(t.signals.sendSignal({ runId: 'x', name: '', signalId: 'a\nb' }))).fields).toEqual(['run_id', 'name', 'signal_id']);
    const big = await failure(t.signals.sendSignal({ runId: run!.id, name: 'go', payload: json('x'.repeat(600)) }));
    expect(shapeOf(big)).toMatchObject({ code: Code.ResourceExhausted, reason: 'PAYLOAD_TOO_LARGE', fields: ['payload'] });
    expect(await snapshot(t.store)).toEqual(before);
  });
});
