import { Code } from '@connectrpc/connect';
import { describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { Sweeper } from '../../src/sweeper/sweeper.js';
import { until } from '../support/until.js';
import { apiHarness, failure, FIXTURE_ITEMS, json, plain, shapeOf, snapshot } from './api-harness.js';

/*
 * StartRun's `timeout` (google.protobuf.Duration) and what a run that timed out looks like through
 * the API: Run.deadline_time, Workflow.timeout, error.reason "run_timed_out" in GetRun, the
 * terminal event of StreamRunEvents and GetJournal. docs/api.md "StartRun", docs/workflows.md "Timeouts".
 */

const hanging = defineWorkflow({ name: 'hanging', input: z.object({}), timeout: '2h' }, async (ctx) => {
  await ctx.step('hang', ({ signal }) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error))));
  return 'never';
});
const items = [...FIXTURE_ITEMS, hanging];
const ms = (t: { seconds: bigint; nanos: number } | undefined) => (t ? Number(t.seconds) * 1000 + Math.round(t.nanos / 1e6) : undefined);

describe('StartRun timeout', () => {
  it('sets Run.deadline_time to create_time plus the timeout; the definition\'s applies without one; ListWorkflows shows it', async () => {
    const t = apiHarness({ items });
    const given = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), timeout: { seconds: 90n, nanos: 500_000 } });
    expect(ms(given.run!.deadlineTime)! - ms(given.run!.createTime)!).toBe(90_001); // a fraction of a millisecond rounds up
    const got = await t.runs.getRun({ runId: given.run!.id });
    expect(got.run!.deadlineTime).toEqual(given.run!.deadlineTime);
    const byDefinition = await t.runs.startRun({ workflow: 'hanging', input: json({}) });
    expect(ms(byDefinition.run!.deadlineTime)! - ms(byDefinition.run!.createTime)!).toBe(7_200_000);
    const replaced = await t.runs.startRun({ workflow: 'hanging', input: json({}), timeout: { seconds: 5n, nanos: 0 } });
    expect(ms(replaced.run!.deadlineTime)! - ms(replaced.run!.createTime)!).toBe(5_000);
    expect((await t.runs.startRun({ workflow: 'echo-flow', input: json({}) })).run!.deadlineTime).toBeUndefined();
    const { workflows } = await t.runs.listWorkflows({});
    expect(ms(workflows.find((w) => w.name === 'hanging')!.timeout)).toBe(7_200_000);
    expect(workflows.find((w) => w.name === 'echo-flow')!.timeout).toBeUndefined();
  });

  it.each([
    ['zero', { seconds: 0n, nanos: 0 }],
    ['negative', { seconds: -5n, nanos: 0 }],
    ['negative nanos', { seconds: 0n, nanos: -1 }],
    ['seconds and nanos of opposite signs', { seconds: 5n, nanos: -1 }],
    ['nanos out of range', { seconds: 1n, nanos: 1_000_000_000 }],
    ['longer than 3650 days', { seconds: 3651n * 86_400n, nanos: 0 }],
    ['the largest Duration', { seconds: 315_576_000_000n, nanos: 999_999_999 }],
  ])('refuses %s: INVALID_ARGUMENT with a field violation on timeout, writing nothing', async (_name, timeout) => {
    const t = apiHarness({ items });
    const err = await failure(t.runs.startRun({ workflow: 'echo-flow', input: json({}), timeout, wait: true }));
    expect(shapeOf(err)).toEqual({ code: Code.InvalidArgument, reason: 'INVALID_REQUEST', fields: ['timeout'] });
    expect(await snapshot(t.store)).toEqual([]);
  });

  it('a run executing here at its deadline: StartRun with wait answers FAILED run_timed_out; the stream and the journal end on it', async () => {
    const t = apiHarness({ items });
    const res = await t.runs.startRun({ workflow: 'hanging', input: json({}), timeout: { seconds: 0n, nanos: 200_000_000 }, wait: true });
    expect(res.run).toMatchObject({ status: RunStatus.FAILED, error: { name: 'RunTimedOutError', reason: 'run_timed_out' } });
    const runId = res.run!.id;
    expect((await t.runs.getRun({ runId })).run!.error).toMatchObject({ reason: 'run_timed_out' });
    const events = [];
    for await (const { event } of t.runs.streamRunEvents({ runId })) events.push(event!);
    expect(events.at(-1)!.body).toMatchObject({
      case: 'statusChanged', value: { status: RunStatus.FAILED, error: { name: 'RunTimedOutError', reason: 'run_timed_out' } },
    });
    const { entries } = await t.runs.getJournal({ runId });
    expect(entries.at(-1)).toMatchObject({ kind: 'status', name: 'FAILED' });
    expect(plain(entries.at(-1)!.payload)).toMatchObject({ status: 'FAILED', error: { name: 'RunTimedOutError', reason: 'run_timed_out' } });
  });

  it('a parked run past its deadline: the sweeper fails it and a stream following it ends on the timeout', async () => {
    const t = apiHarness({ items });
    const sweeper = new Sweeper({ store: t.store, holder: 'sweeper', graceMs: 0 });
    onTestFinished(() => sweeper.stop());
    const { run } = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), timeout: { seconds: 0n, nanos: 300_000_000 }, wait: true });
    expect(run!.status).toBe(RunStatus.SUSPENDED);
    const events: { status: RunStatus; reason: string | undefined }[] = [];
    const following = (async () => {
      for await (const { event } of t.runs.streamRunEvents({ runId: run!.id, followSuspended: true })) {
        if (event!.body.case === 'statusChanged') events.push({ status: event!.body.value.status, reason: event!.body.value.error?.reason });
      }
    })();
    // Nobody executes it: only the sweeper can end it, once the store's clock passes the deadline.
    await until('the sweeper to time the run out', async () => ((await sweeper.sweepOnce()).timedOut.length > 0 ? true : undefined));
    await following;
    expect(events.at(-1)).toEqual({ status: RunStatus.FAILED, reason: 'run_timed_out' });
    expect((await t.runs.getRun({ runId: run!.id })).run).toMatchObject({ status: RunStatus.FAILED, error: { reason: 'run_timed_out' } });
  });
});
