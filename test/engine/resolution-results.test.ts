import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { NS, setup } from './harness.js';

/*
 * Engine operations that resolve a wait say which run it was and whether it became runnable, so
 * the caller (replica-engine.ts, one decision for every RPC) executes it without parsing ids.
 */
const gated = defineWorkflow({ name: 'gated', input: z.object({}) }, async (ctx) => {
  const d = await ctx.approve({ title: 'Ship it?' });
  const n = await ctx.signal('go', { schema: z.number() });
  return { approved: d.approved, n };
});

describe('resolution results', () => {
  it('approvalDecide and signalSend name the run and say whether it became runnable; repeats and buffering do not', async () => {
    const { engine } = setup([gated]);
    const { run, waitingOn } = await engine.runStart({ namespace: NS, workflowName: 'gated', input: {}, execute: true });
    const approvalId = waitingOn[0]!.approvalId!;

    const decide = { namespace: NS, approvalId, approve: true, by: 'ana', requestId: 'r1' };
    expect(await engine.approvalDecide(decide)).toMatchObject({ runId: run.id, runnable: true, applied: true });
    expect(await engine.approvalDecide(decide)).toMatchObject({ runId: run.id, runnable: false, duplicate: true });
    expect(await engine.approvalDecide({ ...decide, requestId: 'r2' })).toMatchObject({ runId: run.id, runnable: false, applied: false });

    // The run has not reached its signal yet (PENDING, not executed): the signal is buffered.
    const signal = { runId: run.id, namespace: NS, name: 'go', payload: 7, signalId: 's1' };
    expect(await engine.signalSend(signal)).toMatchObject({ runId: run.id, runnable: false, buffered: true });
    await engine.runExecute({ runId: run.id, namespace: NS });
    expect((await engine.store.runGet({ runId: run.id, namespace: NS })).status).toBe('SUCCEEDED');
  });

  it('a signal that closes an open wait makes the run runnable; runResume without execution does too', async () => {
    const { engine } = setup([gated]);
    const { run, waitingOn } = await engine.runStart({ namespace: NS, workflowName: 'gated', input: {}, execute: true });
    await engine.approvalDecide({ namespace: NS, approvalId: waitingOn[0]!.approvalId!, approve: true, by: 'ana', requestId: 'r1' });
    expect((await engine.runExecute({ runId: run.id, namespace: NS }))?.outcome).toBe('suspended');
    const sent = await engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: 7, signalId: 's1' });
    expect(sent).toMatchObject({ runId: run.id, runnable: true, applied: true, buffered: false });

    const resumed = await engine.runResume({ runId: run.id, namespace: NS, execute: false });
    expect(resumed).toMatchObject({ runId: run.id, runnable: true, execution: null });
    expect((await engine.runResume({ runId: run.id, namespace: NS })).runnable).toBe(false);
  });
});
