import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { defineWorkflow } from '../../src/index.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { INTERRUPTED_PARENT_ENDED, INTERRUPTED_RECOVERY, Sweeper, type SweeperOptions } from '../../src/sweeper/sweeper.js';
import { FakeClock, NS } from '../engine/harness.js';

/*
 * Every sweeper duty of DESIGN.md, over the memory store with a clock the test moves (STYLE habit
 * 7), plus leadership: of several sweepers exactly one acts, and a deposed leader's writes are fenced.
 * test/chaos/ runs the same duties with real processes on Postgres.
 */

const TTL = 1_000;
const GRACE = 2_000;

const kid = defineWorkflow({ name: 'kid', input: z.object({}) }, async () => 'kid done');
const parent = defineWorkflow({ name: 'parent', input: z.object({}) }, async (ctx) => ctx.child(kid, {}));
const napper = defineWorkflow({ name: 'napper', input: z.object({}) }, async (ctx) => {
  await ctx.sleep('1h');
  return 'rested';
});
const asker = defineWorkflow({ name: 'asker', input: z.object({}) }, async (ctx) => (await ctx.approve({ title: 'ok?', deadline: '1h', onTimeout: 'deny' })).approved);
const plain = defineWorkflow({ name: 'plain', input: z.object({}) }, async () => 'plain');

function world() {
  const clock = new FakeClock();
  const store = new MemoryStore({ clock: clock.now });
  const registry = new Registry().register(kid, parent, napper, asker, plain);
  const engine = new RunEngine({ store, registry, holder: 'worker', leaseTtlMs: TTL, clock: clock.now });
  const sweeper = (holder: string, o: Partial<SweeperOptions> = {}) =>
    new Sweeper({ store, holder, intervalMs: 60_000, leaderTtlMs: 5_000, graceMs: GRACE, ...o });
  return { clock, store, engine, sweeper };
}

describe('Sweeper duties', () => {
  it('1. expired leases become claimable; the fourth expiry fails the run as Interrupted', async () => {
    const { clock, store, engine, sweeper } = world();
    const s = sweeper('s1');
    const { run, lease } = await store.runCreate({
      namespace: NS, workflowName: 'plain', workflowVersion: '1', workflowDigest: plain.digest, input: {}, leaseFor: { holder: 'dead', ttlMs: TTL },
    });
    clock.advance(TTL + 1);
    expect((await s.sweepOnce()).recovered).toEqual([]); // inside the grace period of a new run
    clock.advance(GRACE);
    let current = lease!;
    for (let i = 1; i <= 3; i++) {
      const report = await s.sweepOnce();
      expect(report).toMatchObject({ leader: true, recovered: [run.id], failed: [] });
      [current] = await store.runClaim({ holder: `dead-${i}`, ttlMs: TTL, limit: 1 }) as [typeof current];
      clock.advance(TTL + 1);
    }
    expect(current.runId).toBe(run.id);
    expect(await s.sweepOnce()).toMatchObject({ recovered: [], failed: [run.id] });
    expect(await store.runGet({ runId: run.id, namespace: NS })).toMatchObject({ status: 'FAILED', error: INTERRUPTED_RECOVERY });
    expect(INTERRUPTED_RECOVERY.message).toBe('Interrupted: the run was ready to continue, but every attempt to resume it failed');
    expect(await engine.runExecutePending()).toEqual([]);
  });

  it('2 and 3. a due approval deadline and a due sleep are resolved, and the runs continue', async () => {
    const { clock, store, engine, sweeper } = world();
    const s = sweeper('s1');
    const approval = await engine.runStart({ namespace: NS, workflowName: 'asker', input: {}, execute: true });
    const nap = await engine.runStart({ namespace: NS, workflowName: 'napper', input: {}, execute: true });
    expect(await s.sweepOnce()).toMatchObject({ timeouts: 0, sleeps: 0 });
    clock.advance(3_600_001);
    expect(await s.sweepOnce()).toMatchObject({ timeouts: 1, sleeps: 1 });
    expect(await s.sweepOnce()).toMatchObject({ timeouts: 0, sleeps: 0 }); // nothing twice
    await engine.runExecutePending();
    expect((await store.runGet({ runId: approval.run.id, namespace: NS })).output).toBe(false);
    expect((await store.runGet({ runId: nap.run.id, namespace: NS })).output).toBe('rested');
  });

  it('4a. a parent whose ended child never woke it (the engine died in between) is woken', async () => {
    const { clock, store, engine, sweeper } = world();
    const s = sweeper('s1');
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'parent', input: {}, execute: true });
    // The child ends without the engine's own childResolveParent: the crash between the two.
    const [childLease] = await store.runClaim({ holder: 'w', ttlMs: TTL, limit: 1 });
    await store.runStatusSet({ lease: childLease!, status: 'SUCCEEDED', output: 'kid done' });
    expect(await s.sweepOnce()).toMatchObject({ parentsWoken: 0 }); // grace: the engine would normally do it
    clock.advance(GRACE + 1);
    expect(await s.sweepOnce()).toMatchObject({ parentsWoken: 1 });
    expect(await s.sweepOnce()).toMatchObject({ parentsWoken: 0 });
    await engine.runExecutePending();
    expect(await store.runGet({ runId: run.id, namespace: NS })).toMatchObject({ status: 'SUCCEEDED', output: 'kid done' });
  });

  it('4b. a child whose parent ended is cancelled (parent cancelled) or failed as Interrupted', async () => {
    const { clock, store, engine, sweeper } = world();
    const s = sweeper('s1');
    const cancelled = await engine.runStart({ namespace: NS, workflowName: 'parent', input: {}, execute: true });
    const failed = await engine.runStart({ namespace: NS, workflowName: 'parent', input: {}, execute: true });
    // Parents ended by force without the engine's recursive cancel (an operator's raw update, a crash mid-cancel).
    await store.runStatusForce({ runId: cancelled.run.id, status: 'CANCELLED' });
    await store.runStatusForce({ runId: failed.run.id, status: 'FAILED', error: { name: 'E', message: 'boom' } });
    expect(await s.sweepOnce()).toMatchObject({ childrenCancelled: 0, childrenFailed: 0 });
    clock.advance(GRACE + 1);
    expect(await s.sweepOnce()).toMatchObject({ childrenCancelled: 1, childrenFailed: 1 });
    const kids = (await store.runList({ namespace: NS, workflowName: 'kid', pageSize: 10 })).runs;
    const byParent = new Map(kids.map((k) => [k.parentRunId, k]));
    expect(byParent.get(cancelled.run.id)).toMatchObject({ status: 'CANCELLED', error: { reason: 'cancelled' } });
    expect(byParent.get(failed.run.id)).toMatchObject({ status: 'FAILED', error: INTERRUPTED_PARENT_ENDED });
    expect(await s.sweepOnce()).toMatchObject({ childrenCancelled: 0, childrenFailed: 0 });
  });
});

describe('Sweeper leadership', () => {
  it('of three sweepers exactly one acts; when it stops, another takes over at once', async () => {
    const { clock, store, sweeper } = world();
    const all = ['a', 'b', 'c'].map((x) => sweeper(x));
    for (let i = 0; i < 30; i++) {
      await store.runCreate({ namespace: NS, workflowName: 'plain', workflowVersion: '1', workflowDigest: plain.digest, input: {}, leaseFor: { holder: 'dead', ttlMs: TTL } });
    }
    clock.advance(GRACE + TTL);
    const reports = await Promise.all(all.map((s) => s.sweepOnce()));
    expect(reports.filter((r) => r.leader)).toHaveLength(1);
    expect(reports.flatMap((r) => r.recovered)).toHaveLength(30);
    const leader = all[reports.findIndex((r) => r.leader)]!;
    leader.start();
    await leader.stop(); // releases the lease
    const next = await Promise.all(all.filter((s) => s !== leader).map((s) => s.sweepOnce()));
    expect(next.filter((r) => r.leader)).toHaveLength(1);
  });

  it('a deposed leader (its lease expired and taken over) is fenced: its sweep writes nothing', async () => {
    const { clock, store, sweeper } = world();
    const a = sweeper('a');
    const b = sweeper('b');
    expect((await a.sweepOnce()).leader).toBe(true);
    clock.advance(5_001); // a "paused" past its leader TTL
    expect((await b.sweepOnce()).leader).toBe(true);
    const { run } = await store.runCreate({ namespace: NS, workflowName: 'plain', workflowVersion: '1', workflowDigest: plain.digest, input: {}, leaseFor: { holder: 'dead', ttlMs: TTL } });
    clock.advance(GRACE + TTL);
    const demoted = once(a.events, 'demoted');
    const stale = await a.sweepOnce(); // still believes it leads
    expect(stale).toMatchObject({ leader: true, fenced: true, recovered: [] });
    await demoted;
    expect(a.leader.current).toBeNull();
    expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('RUNNING');
    expect((await b.sweepOnce()).recovered).toEqual([run.id]);
    expect((await a.sweepOnce()).leader).toBe(false);
  });

  it('validates its settings and emits sweep events from its loop', async () => {
    const { store, sweeper } = world();
    expect(() => new Sweeper({ store, holder: 'x', intervalMs: 0 })).toThrow(RangeError);
    expect(() => new Sweeper({ store, holder: 'x', graceMs: -1 })).toThrow(RangeError);
    expect(() => new Sweeper({ store, holder: 'x', leaderTtlMs: 1.5 })).toThrow(RangeError);
    const s = sweeper('loop');
    const first = once(s.events, 'sweep');
    s.start();
    const [report] = await first;
    expect(report).toMatchObject({ leader: true });
    const stopped = once(s.events, 'stopped');
    await s.stop();
    await stopped;
    expect(() => s.start()).toThrow(/already stopped/);
  });
});
