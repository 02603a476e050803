import { expect, it } from 'vitest';
import type { ServedWorkflow } from '../../src/store/store.js';
import { runParams, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * Routing (docs/recovery.md "Routing"): replicas record what they serve with a heartbeat; a claimer
 * gets only runs it can execute; runs nobody can execute are listed for the sweeper's report.
 */

function served(name: string, digest: string, drift: 'warn' | 'strict' = 'warn'): ServedWorkflow {
  return { name, version: '1', digest, drift, description: '', inputSchema: null };
}

export function routingSection({ h }: SuiteContext): void {
  it('replicas are listed while their heartbeat lives, newest start first; a clean stop removes one', async () => {
    const { store, advance } = h();
    await store.replicaHeartbeat({ replicaId: 'a', workflows: [served('x', 'd1')], ttlMs: 10_000 });
    await advance(1_000);
    await store.replicaHeartbeat({ replicaId: 'b', workflows: [served('x', 'd2'), served('y', 'd3')], ttlMs: 10_000 });
    expect((await store.replicaList()).map((r) => r.replicaId)).toEqual(['b', 'a']);
    expect((await store.replicaList())[0]!.workflows).toEqual([served('x', 'd2'), served('y', 'd3')]);
    await advance(9_500);
    expect((await store.replicaList()).map((r) => r.replicaId)).toEqual(['b']);
    // A later heartbeat revives an expired replica with what it serves now.
    await store.replicaHeartbeat({ replicaId: 'a', workflows: [served('z', 'd9')], ttlMs: 10_000 });
    expect((await store.replicaList()).find((r) => r.replicaId === 'a')?.workflows).toEqual([served('z', 'd9')]);
    await store.replicaRemove({ replicaId: 'b' });
    expect((await store.replicaList()).map((r) => r.replicaId)).toEqual(['a']);
  });

  it('a claimer gets only runs it serves: the exact digest, or the name while no live replica has the digest', async () => {
    const { store } = h();
    const x1 = (await store.runCreate(runParams({ workflowName: 'x', workflowDigest: 'd1' }))).run;
    const x2 = (await store.runCreate(runParams({ workflowName: 'x', workflowDigest: 'd2' }))).run;
    const y = (await store.runCreate(runParams({ workflowName: 'y', workflowDigest: 'd3' }))).run;
    await store.replicaHeartbeat({ replicaId: 'old', workflows: [served('x', 'd1')], ttlMs: 60_000 });
    // A claimer of x@d2 gets the run pinned to d2, not x@d1 while the old replica (serving d1) is alive, nothing of y.
    const first = await store.runClaim({ holder: 'new', ttlMs: TTL, limit: 10, serves: [served('x', 'd2')] });
    expect(first.map((l) => l.runId)).toEqual([x2.id]);
    expect(await store.runClaim({ holder: 'new', ttlMs: TTL, limit: 10, serves: [served('x', 'd2')] })).toEqual([]);
    // Once that replica is gone, the x@d2 claimer takes x@d1 too (the engine applies the drift policy).
    await store.replicaRemove({ replicaId: 'old' });
    const after = await store.runClaim({ holder: 'new', ttlMs: TTL, limit: 10, serves: [served('x', 'd2')] });
    expect(after.map((l) => l.runId)).toEqual([x1.id]);
    // Without `serves` anything is claimed.
    expect((await store.runClaim({ holder: 'any', ttlMs: TTL, limit: 10 })).map((l) => l.runId)).toEqual([y.id]);
  });

  it('a take with routing takes only a run the taker may execute (runClaim\'s rule), and journals nothing when it may not', async () => {
    const { store } = h();
    const x1 = (await store.runCreate(runParams({ workflowName: 'x', workflowDigest: 'd1' }))).run;
    await store.replicaHeartbeat({ replicaId: 'old', workflows: [served('x', 'd1')], ttlMs: 60_000 });
    const take = (serves: ServedWorkflow[]) =>
      store.runLeaseAcquireRunning({ runId: x1.id, holder: 'new', ttlMs: TTL, statuses: ['PENDING'], routing: { serves, flows: true } });
    // Pinned to d1, which a live replica serves: a replica of d2 (or of y only) does not take it.
    expect(await take([served('x', 'd2')])).toBeNull();
    expect(await take([served('y', 'd3')])).toBeNull();
    expect((await store.journalList({ runId: x1.id })).map((e) => e.status)).toEqual([]);
    expect((await store.runGet({ runId: x1.id, namespace: 'default' })).status).toBe('PENDING');
    // Once no live replica serves d1, a replica of x@d2 takes it (the engine applies the drift policy).
    await store.replicaRemove({ replicaId: 'old' });
    const taken = await take([served('x', 'd2')]);
    expect(taken).toMatchObject({ run: { id: x1.id, status: 'RUNNING', leaseHolder: 'new' }, entry: { runId: x1.id, seq: 0 } });
  });

  it('lists PENDING runs whose workflow no live replica serves, once they waited long enough', async () => {
    const { store, advance } = h();
    const nobody = (await store.runCreate(runParams({ workflowName: 'gone', workflowDigest: 'd' }))).run;
    const otherDigest = (await store.runCreate(runParams({ workflowName: 'x', workflowDigest: 'other' }))).run;
    await store.replicaHeartbeat({ replicaId: 'r', workflows: [served('x', 'd1')], ttlMs: 600_000 });
    expect(await store.runListUnroutable({ olderThanMs: 60_000, limit: 10 })).toEqual([]);
    await advance(61_000);
    const listed = await store.runListUnroutable({ olderThanMs: 60_000, limit: 10 });
    expect(listed.map((r) => r.runId)).toEqual([nobody.id]);
    expect(listed[0]).toMatchObject({ workflowName: 'gone', workflowDigest: 'd', namespace: 'default' });
    expect(listed.some((r) => r.runId === otherDigest.id)).toBe(false);
  });
}
