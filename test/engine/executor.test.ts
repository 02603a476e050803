import { once } from 'node:events';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Executor } from '../../src/engine/scheduling/executor.js';
import { Registry } from '../../src/engine/registry.js';
import { defineWorkflow } from '../../src/index.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { JournalStore } from '../../src/store/store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { EffectSink, NS } from './harness.js';
import { deferred } from './suite/support.js';

/*
 * The executor loop over both stores: it claims what is PENDING (woken by the store, not only by
 * its poll), never runs more than `concurrency` at once, and on stop hands unfinished runs back.
 * Tests wait on the executor's events, never on time (STYLE habit 7).
 */

let db: MigratedDatabase;
let admin: pg.Pool;
const opened: JournalStore[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_executor');
  admin = db.admin;
});

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await db?.drop();
});

const stores: Record<string, () => Promise<JournalStore>> = {
  MemoryStore: async () => new MemoryStore(),
  PostgresStore: async () => {
    const store = await PostgresStore.connect({ url: db.url, applicationName: 'executor-test', poolSize: 4 });
    opened.push(store);
    return store;
  },
};

/** Collects `finished` events until `n` arrived. */
function finishedCount(executor: Executor, n: number): Promise<string[]> {
  const ids: string[] = [];
  return new Promise((resolve) => {
    const on = ({ runId }: { runId: string }) => {
      ids.push(runId);
      if (ids.length >= n) {
        executor.events.off('finished', on);
        resolve(ids);
      }
    };
    executor.events.on('finished', on);
  });
}

describe.each(Object.keys(stores))('Executor on %s', (storeName) => {
  const sink = new EffectSink();
  const gates = new Map<string, { promise: Promise<void> }>();
  let running = 0;
  let maxRunning = 0;
  const gated = defineWorkflow({ name: 'gated', input: z.object({ gate: z.string() }) }, async (ctx, { gate }) => {
    return ctx.step('work', async ({ idempotencyKey, signal }) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      try {
        const g = gates.get(gate);
        if (g) await Promise.race([g.promise, new Promise((resolve) => signal.addEventListener('abort', resolve))]);
        sink.deliver(gate, idempotencyKey);
        return gate;
      } finally {
        running--;
      }
    });
  });

  /** An effect that, once aborted, settles only when the test says so (or never, when `honour` is false). */
  const slow = new Map<string, { aborted: ReturnType<typeof deferred<void>>; settle: ReturnType<typeof deferred<void>>; done: ReturnType<typeof deferred<void>>; started: ReturnType<typeof deferred<void>>; honour: boolean }>();
  const lingering = defineWorkflow({ name: 'lingering', input: z.object({ key: z.string() }) }, async (ctx, { key }) => {
    return ctx.step('work', async ({ idempotencyKey, signal }) => {
      const s = slow.get(key)!;
      if (s.honour) signal.addEventListener('abort', () => s.aborted.resolve());
      s.started.resolve();
      await s.settle.promise;
      sink.deliver(key, idempotencyKey);
      s.done.resolve();
      return key;
    });
  });

  function engineOn(store: JournalStore, holder: string): RunEngine {
    return new RunEngine({ store, registry: new Registry().register(gated).register(lingering), holder, leaseTtlMs: 30_000 });
  }

  it('on stop aborts what still executes after the grace period and releases its lease only once its effect settled', async () => {
    const store = await stores[storeName]!();
    if (store instanceof PostgresStore) await admin.query('TRUNCATE runs, journal, suspension_deadlines CASCADE');
    const engine = engineOn(store, `${storeName}-s1`);
    const a = new Executor({ driver: engine.driver, store, concurrency: 1, pollMs: 3_600_000, settleMs: 3_600_000 });
    await a.start();
    const key = `s1${storeName}`;
    const s = { aborted: deferred(), settle: deferred(), done: deferred(), started: deferred(), honour: true };
    slow.set(key, s);
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'lingering', input: { key } });
    await s.started.promise; // its effect is in flight
    const stopping = a.stop({ graceMs: 0 });
    // The effect saw its AbortSignal fire; while it is still running the lease is kept.
    await s.aborted.promise;
    expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('RUNNING');
    s.settle.resolve();
    expect(await stopping).toEqual({ released: [run.id], unsettled: [] });
    expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('PENDING');
    // Aborted: the settled effect's result was not journaled (another worker redispatches it).
    expect((await store.journalList({ runId: run.id })).filter((e) => e.kind === 'step' && e.status === 'ok')).toEqual([]);
  });

  it('on stop keeps the lease of an execution whose effect ignores the abort: it expires and the sweeper recovers it', async () => {
    const store = await stores[storeName]!();
    if (store instanceof PostgresStore) await admin.query('TRUNCATE runs, journal, suspension_deadlines CASCADE');
    const engine = engineOn(store, `${storeName}-s2`);
    const a = new Executor({ driver: engine.driver, store, concurrency: 1, pollMs: 3_600_000, settleMs: 0 });
    await a.start();
    const key = `s2${storeName}`;
    const s = { aborted: deferred(), settle: deferred(), done: deferred(), started: deferred(), honour: false };
    slow.set(key, s);
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'lingering', input: { key } });
    await s.started.promise; // its effect is in flight
    expect(await a.stop({ graceMs: 0 })).toEqual({ released: [], unsettled: [run.id] });
    const held = await store.runGet({ runId: run.id, namespace: NS });
    expect(held.status).toBe('RUNNING');
    // No other worker can take it while the effect may still run here.
    expect(await store.runClaim({ holder: `${storeName}-s2-other`, ttlMs: 30_000, limit: 10, namespace: NS })).toEqual([]);
    s.settle.resolve();
    await s.done.promise;
    expect((await store.journalList({ runId: run.id })).filter((e) => e.kind === 'step' && e.status === 'ok')).toEqual([]);
  });

  it('claims and executes pending runs, at most `concurrency` at once, woken without waiting for its poll', async () => {
    const store = await stores[storeName]!();
    if (store instanceof PostgresStore) await admin.query('TRUNCATE runs, journal, suspension_deadlines CASCADE');
    const engine = engineOn(store, `${storeName}-a`);
    // A poll period far longer than the test: only wake-ups can make it finish in time.
    const executor = new Executor({ driver: engine.driver, store, concurrency: 2, pollMs: 3_600_000 });
    await executor.start();
    const ids: string[] = [];
    const done = finishedCount(executor, 6);
    for (let i = 0; i < 6; i++) {
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'gated', input: { gate: `c${storeName}${i}` } });
      ids.push(run.id);
    }
    expect((await done).sort()).toEqual([...ids].sort());
    expect(maxRunning).toBeLessThanOrEqual(2);
    for (const id of ids) expect((await store.runGet({ runId: id, namespace: NS })).status).toBe('SUCCEEDED');
    await executor.stop({ graceMs: 1_000 });
  });

  it('on stop lets an in-flight run finish within the grace period', async () => {
    const store = await stores[storeName]!();
    const engine = engineOn(store, `${storeName}-b`);
    const executor = new Executor({ driver: engine.driver, store, concurrency: 1, pollMs: 3_600_000 });
    await executor.start();
    const gate = deferred();
    gates.set(`g${storeName}`, gate);
    const claimed = once(executor.events, 'claimed');
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'gated', input: { gate: `g${storeName}` } });
    await claimed;
    const stopping = executor.stop({ graceMs: 60_000 });
    gate.resolve();
    expect(await stopping).toEqual({ released: [], unsettled: [] });
    expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('SUCCEEDED');
  });

  it('on stop releases what is still executing after the grace period; another executor continues it at once', async () => {
    const store = await stores[storeName]!();
    const engineA = engineOn(store, `${storeName}-c1`);
    const a = new Executor({ driver: engineA.driver, store, concurrency: 1, pollMs: 3_600_000 });
    await a.start();
    gates.set(`h${storeName}`, deferred()); // never opened: only the abort ends it on A
    const claimed = once(a.events, 'claimed');
    const { run } = await engineA.runStart({ namespace: NS, workflowName: 'gated', input: { gate: `h${storeName}` } });
    await claimed;
    const { released } = await a.stop({ graceMs: 10 });
    expect(released).toEqual([run.id]);
    expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('PENDING');

    gates.delete(`h${storeName}`);
    const engineB = engineOn(store, `${storeName}-c2`);
    const b = new Executor({ driver: engineB.driver, store, concurrency: 1, pollMs: 3_600_000 });
    const finished = once(b.events, 'finished');
    await b.start();
    const [{ runId, result }] = await finished as [{ runId: string; result: { outcome: string } }];
    expect(runId).toBe(run.id);
    expect(result.outcome).toBe('succeeded');
    await b.stop({ graceMs: 1_000 });
    const after = await store.runGet({ runId: run.id, namespace: NS });
    expect(after.status).toBe('SUCCEEDED');
    // A's execution was fenced when its lease was released: it wrote no terminal entry of its own.
    const oks = (await store.journalList({ runId: run.id })).filter((e) => e.kind === 'step' && e.status === 'ok');
    expect(oks).toHaveLength(1);
  });

  it('emits idle when there is nothing to claim, and validates its settings', async () => {
    const store = await stores[storeName]!();
    if (store instanceof PostgresStore) await admin.query('TRUNCATE runs, journal, suspension_deadlines CASCADE');
    const engine = engineOn(store, `${storeName}-d`);
    expect(() => new Executor({ driver: engine.driver, store, concurrency: 0 })).toThrow(RangeError);
    expect(() => new Executor({ driver: engine.driver, store, pollMs: -1 })).toThrow(RangeError);
    const executor = new Executor({ driver: engine.driver, store, pollMs: 3_600_000 });
    const idle = once(executor.events, 'idle');
    await executor.start();
    await idle;
    expect(executor.busy).toBe(0);
    await executor.stop({ graceMs: 0 });
    await expect(executor.start()).rejects.toThrow(/already stopped/);
  });
});

describe('Executor without wake-ups', () => {
  it('falls back to polling (a lost NOTIFY), and retries after a failed claim', async () => {
    const inner = new MemoryStore();
    let failNextClaim = true;
    // Wake-ups never fire (as when the LISTEN connection is down), and the first claim fails.
    const store = new Proxy(inner, {
      get(target, key) {
        if (key === 'wakeupSubscribe') return async () => async () => undefined;
        if (key === 'runClaim') {
          return async (params: Parameters<MemoryStore['runClaim']>[0]) => {
            if (failNextClaim) {
              failNextClaim = false;
              throw new Error('database unavailable');
            }
            return target.runClaim(params);
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as JournalStore;
    const plain = defineWorkflow({ name: 'plain', input: z.object({}) }, async (ctx) => ctx.step('s', () => 'ok'));
    const engine = new RunEngine({ store, registry: new Registry().register(plain), holder: 'poller', leaseTtlMs: 30_000 });
    const executor = new Executor({ driver: engine.driver, store, pollMs: 20 });
    const failed = once(executor.events, 'claim-failed');
    const finished = once(executor.events, 'finished');
    await executor.start();
    await failed;
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'plain', input: {} });
    const [{ runId }] = await finished as [{ runId: string }];
    expect(runId).toBe(run.id);
    expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('SUCCEEDED');
    await executor.stop({ graceMs: 1_000 });
  });
});
