import { expect, it } from 'vitest';
import type { FlowRegisterParams } from '../../src/store/store.js';
import { runParams, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * Declarative flows (docs/flows.md): versions 1, 2, ... per (namespace, name), the latest's content
 * again is a no-op, reads by version or latest, listing the latest of each; runs of a flow are
 * claimed by any claimer that asks for flows, and never listed as unroutable.
 */

function flow(name: string, digest: string, overrides: Partial<FlowRegisterParams> = {}): FlowRegisterParams {
  return { namespace: 'ns-a', name, digest, definition: { name, start: 'done', nodes: [{ id: 'done', end: {} }], digest }, ...overrides };
}

export function flowsSection({ h }: SuiteContext): void {
  it('registers versions 1, 2, ...; the latest content again stores nothing and returns that version', async () => {
    const { store } = h();
    const before = await store.clockNow();
    const first = await store.flowRegister(flow('triage', 'd1'));
    expect(first).toMatchObject({ created: true, flow: { namespace: 'ns-a', name: 'triage', version: 1, digest: 'd1', definition: flow('triage', 'd1').definition } });
    expect(first.flow.createdAt.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1);
    expect(await store.flowRegister(flow('triage', 'd1'))).toEqual({ flow: first.flow, created: false });
    const second = await store.flowRegister(flow('triage', 'd2'));
    expect(second).toMatchObject({ created: true, flow: { version: 2, digest: 'd2' } });
    // An older version's content is an edit of the latest: a new version.
    expect(await store.flowRegister(flow('triage', 'd1'))).toMatchObject({ created: true, flow: { version: 3, digest: 'd1' } });
  });

  it('reads the latest version or one by number, within its namespace only', async () => {
    const { store } = h();
    await store.flowRegister(flow('triage', 'd1'));
    await store.flowRegister(flow('triage', 'd2'));
    expect(await store.flowGet({ namespace: 'ns-a', name: 'triage' })).toMatchObject({ version: 2, digest: 'd2' });
    expect(await store.flowGet({ namespace: 'ns-a', name: 'triage', version: 1 })).toMatchObject({ version: 1, digest: 'd1' });
    expect(await store.flowGet({ namespace: 'ns-a', name: 'triage', version: 3 })).toBeNull();
    expect(await store.flowGet({ namespace: 'ns-b', name: 'triage' })).toBeNull();
    expect(await store.flowGet({ namespace: 'ns-a', name: 'other' })).toBeNull();
  });

  it('lists the latest version of each flow of a namespace, by name', async () => {
    const { store } = h();
    await store.flowRegister(flow('zeta', 'z1'));
    await store.flowRegister(flow('alpha', 'a1'));
    await store.flowRegister(flow('alpha', 'a2'));
    await store.flowRegister(flow('beta', 'b1', { namespace: 'ns-b' }));
    const listed = await store.flowList({ namespace: 'ns-a' });
    expect(listed.map((f) => [f.name, f.version, f.digest])).toEqual([['alpha', 2, 'a2'], ['zeta', 1, 'z1']]);
    expect((await store.flowList({ namespace: 'ns-b' })).map((f) => f.name)).toEqual(['beta']);
    expect(await store.flowList({ namespace: 'ns-none' })).toEqual([]);
  });

  it('concurrent registrations of one name get distinct versions; equal content is stored once', async () => {
    const { store } = h();
    const results = await Promise.all(['d1', 'd2', 'd3', 'd4', 'd5'].map((d) => store.flowRegister(flow('busy', d))));
    expect(results.map((r) => r.flow.version).sort()).toEqual([1, 2, 3, 4, 5]);
    const same = await Promise.all([1, 2, 3, 4].map(() => store.flowRegister(flow('same', 's1'))));
    expect(same.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(same.map((r) => r.flow.version))).toEqual(new Set([1]));
  });

  it('a claimer asking for flows gets runs of a flow of the run\'s namespace, served or not; such runs are never unroutable', async () => {
    const { store, advance } = h();
    await store.flowRegister(flow('triage', 'd1'));
    const ofFlow = (await store.runCreate(runParams({ namespace: 'ns-a', workflowName: 'triage', workflowDigest: 'd1' }))).run;
    // The same name in another namespace is no flow there.
    const elsewhere = (await store.runCreate(runParams({ namespace: 'ns-b', workflowName: 'triage', workflowDigest: 'd1' }))).run;
    await advance(61_000);
    const unroutable = (await store.runListUnroutable({ olderThanMs: 60_000, limit: 10 })).map((r) => r.runId);
    expect(unroutable).toEqual([elsewhere.id]);
    // Without `flows`, a claimer serving other workflows does not take it.
    expect(await store.runClaim({ holder: 'w', ttlMs: TTL, limit: 10, serves: [{ name: 'x', digest: 'dx' }] })).toEqual([]);
    const claimed = await store.runClaim({ holder: 'w', ttlMs: TTL, limit: 10, serves: [{ name: 'x', digest: 'dx' }], flows: true });
    expect(claimed.map((l) => l.runId)).toEqual([ofFlow.id]);
  });
}
