import { randomUUID } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { endpointUrlProblem } from '../../src/webhooks/target-guard.js';
import { flowMessage } from '../flows/flow-fixtures.js';
import { json } from './api-harness.js';
import { expectRefused, startTenant, type Tenant } from './hostile-tenant-support.js';

/*
 * Issue 29, classes 8 and 10: numbers out of the store's range are the request's mistake
 * (INVALID_ARGUMENT naming the field, never INTERNAL), errors carry the reasons and field names
 * docs/api.md's table gives, and a webhook URL cannot smuggle a line break.
 */

let t: Tenant;
beforeAll(async () => {
  t = await startTenant('waymark_hostile_requests');
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const INVALID_REQUEST = { code: Code.InvalidArgument, reason: 'INVALID_REQUEST' };
const run = randomUUID();

describe('class 8: numbers are range-checked before they reach SQL', () => {
  it.each(['9999999999', '2147483648'])('an approval id ending :%s is INVALID_REQUEST on id, for GetApproval and DecideApproval', async (seq) => {
    await expectRefused(t, () => t.signals.getApproval({ id: `${run}:${seq}` }), { ...INVALID_REQUEST, fields: ['id'] });
    await expectRefused(t, () => t.signals.decideApproval({ id: `${run}:${seq}`, approve: true, by: 'ops' }), { ...INVALID_REQUEST, fields: ['id'] });
  });

  it('a task id past the range and a fencing token of 2^31 are INVALID_REQUEST naming them, for Heartbeat and CompleteTask', async () => {
    const big = `${run}:9999999999`;
    await expectRefused(t, () => t.workers.heartbeat({ workerId: 'w', taskId: big, fencingToken: 1n }), { ...INVALID_REQUEST, fields: ['task_id'] });
    await expectRefused(t, () => t.workers.heartbeat({ workerId: 'w', taskId: `${run}:1`, fencingToken: 2n ** 31n }), { ...INVALID_REQUEST, fields: ['fencing_token'] });
    await expectRefused(t, () => t.workers.completeTask({ workerId: 'w', taskId: big, fencingToken: 2n ** 31n, outcome: { case: 'output', value: json(1) } }), {
      ...INVALID_REQUEST, fields: ['task_id', 'fencing_token'],
    });
  });
});

describe('class 10: reasons and field names as docs/api.md says', () => {
  it('RegisterWorker\'s declaration problems are INVALID_REQUEST with the request\'s field names', async () => {
    await expectRefused(t, () => t.workers.registerWorker({ workerId: 'w-1', tools: [{ name: 'bad name!' }, { name: 'ok', inputSchema: json('not a schema') }] }), {
      ...INVALID_REQUEST, fields: ['tools[0].name', 'tools[1].input_schema'],
    });
  });

  it('CompleteTask with an output over 1 MiB is PAYLOAD_TOO_LARGE naming output, and the task stays open', async () => {
    await t.workers.registerWorker({ workerId: 'big-out', tools: [{ name: 'remote_echo' }] });
    await t.flows.registerFlow({
      flow: flowMessage({
        name: 'calls-remote', start: 'call',
        nodes: [{ id: 'call', tool: { tool: 'remote_echo', arguments: { x: 1 } } }, { id: 'done', end: {} }],
        edges: [{ from: 'call', to: 'done' }],
      }),
    });
    const started = await t.runs.startRun({ workflow: 'calls-remote', input: json({}), wait: true }, { timeoutMs: 30_000 });
    expect(started.run?.status).toBe(RunStatus.SUSPENDED);
    const { task } = await t.workers.pollTask({ workerId: 'big-out', wait: { seconds: 5n, nanos: 0 } }, { timeoutMs: 30_000 });
    expect(task).toBeDefined();
    const output = json({ blob: 'x'.repeat(1024 * 1024) });
    // Not held to the 100 ms bound: decoding and measuring a 1 MiB message is the payload limit's
    // cost (WAYMARK_MAX_PAYLOAD_BYTES, about 150 ms on the shared test machine), the same for any RPC.
    await expectRefused(t, () => t.workers.completeTask({ workerId: 'big-out', taskId: task!.taskId, fencingToken: task!.fencingToken, outcome: { case: 'output', value: output } }), {
      code: Code.ResourceExhausted, reason: 'PAYLOAD_TOO_LARGE', fields: ['output'],
    }, { bounded: false });
    const fits = await t.workers.completeTask({ workerId: 'big-out', taskId: task!.taskId, fencingToken: task!.fencingToken, outcome: { case: 'output', value: json({ ok: true }) } });
    expect(fits.applied).toBe(true);
    // Item 13: the result entry carries its effect's idempotency key, as an in-process tool's does.
    const entries = await t.api.store.journalList({ runId: started.run!.id });
    const tool = entries.filter((e) => e.kind === 'tool');
    expect(tool.map((e) => e.status)).toEqual(['suspended', 'resolved']);
    expect(tool[1]!.idempotencyKey).toBe(task!.idempotencyKey);
    expect(task!.idempotencyKey).not.toBe('');
  }, 60_000);

  it('a webhook URL holding CR or LF is refused (the URL parser would drop them silently)', () => {
    const smuggled = 'https://hooks.example.com/x\r\nX-Injected: 1';
    expect(new URL(smuggled).href).not.toContain('\n');
    expect(endpointUrlProblem(smuggled, false)).toMatch(/control characters/);
    expect(endpointUrlProblem('https://hooks.example.com/a\nb', false)).toMatch(/control characters/);
    expect(endpointUrlProblem('https://hooks.example.com/ok', false)).toBeNull();
  });
});
