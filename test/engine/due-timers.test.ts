import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { DueTimers } from '../../src/engine/scheduling/due-timers.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { JournalStore } from '../../src/store/store.js';
import { Sweeper } from '../../src/sweeper/sweeper.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { journal, NS, TTL } from './harness.js';
import { deferred } from './suite/support.js';

/*
 * The replica's in-memory timers (scheduling/due-timers.ts) racing a signal and the sweeper for one
 * wait: at the moment a held deadline is due, the test sends the signal and runs a sweep, so three
 * parties write a resolution of the same wait at once. Whoever wins, the wait is resolved once
 * (one `resolved` entry; the run continues with that winner's value), on both stores.
 */

const waitGo = defineWorkflow({ name: 'wait-go', input: z.object({}) }, async (ctx) => ctx.signal('go', { deadline: '1s', default: 'timeout' }));

const RUNS = 8;

type Method = (...args: unknown[]) => Promise<unknown>;

/** `inner` with the store methods named in `keys` replaced by `wrap(the method, its arguments)`. */
function intercepted(inner: JournalStore, keys: readonly string[], wrap: (method: Method, args: unknown[]) => Promise<unknown>): JournalStore {
  return new Proxy(inner, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      const method = (value as Method).bind(target);
      return keys.includes(String(key)) ? (...args: unknown[]) => wrap(method, args) : method;
    },
  });
}

let db: MigratedDatabase;
let pgStore: PostgresStore;

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_due_timers');
  pgStore = await PostgresStore.connect({ url: db.url, applicationName: 'due-timers', poolSize: 6 });
});

afterAll(async () => {
  await pgStore?.close();
  await db?.drop();
});

describe.each([
  ['memory', () => new MemoryStore() as JournalStore],
  ['postgres', () => pgStore as JournalStore],
])('due timers (%s)', (_name, makeStore) => {
  it('a timer, a signal and the sweeper racing for one wait resolve it once', async () => {
    const store = makeStore();
    const engine = new RunEngine({ store, registry: new Registry().register(waitGo), holder: 'replica-a', leaseTtlMs: TTL });
    const timers = new DueTimers({ driver: engine.driver, horizonMs: 60_000 });
    const sweeper = new Sweeper({ store, holder: 'sweeper', graceMs: 0 });
    timers.start();
    const held: string[] = [];
    timers.events.on('held', ({ runId }) => held.push(runId));
    const races: Promise<unknown>[] = [];
    const fired = new Map<string, boolean>();
    let allHeldFired: () => void = () => undefined;
    const allFired = new Promise<void>((resolve) => (allHeldFired = resolve));
    let started = false;
    const check = (): void => {
      if (started && fired.size === held.length) allHeldFired();
    };
    timers.events.on('fired', ({ runId, applied }) => {
      fired.set(runId, applied);
      check();
    });
    const errors: unknown[] = [];
    timers.events.on('failed', ({ error }) => errors.push(error));
    timers.events.on('due', ({ runId }) => {
      races.push(engine.signalSend({ runId, namespace: NS, name: 'go', payload: 'signal', signalId: `s-${runId}` }));
      races.push(sweeper.sweepOnce());
    });
    try {
      const ids: string[] = [];
      for (let i = 0; i < RUNS; i++) {
        const { run, execution } = await engine.runStart({ namespace: NS, workflowName: 'wait-go', input: {}, execute: true });
        // Parked, unless a slow start let a sweep racing an earlier run's timer resolve it already.
        expect(['suspended', 'succeeded']).toContain(execution?.outcome);
        ids.push(run.id);
      }
      expect(held.length).toBeGreaterThan(0);
      started = true;
      check();
      await allFired;
      expect(errors).toEqual([]);
      await Promise.all(races);
      await engine.driver.executePending({ namespace: NS });
      for (const id of ids) {
        const entries = await journal(store, id);
        const wait = entries.find((e) => e.status === 'suspended')!;
        const resolved = entries.filter((e) => e.refSeq === wait.seq && e.status === 'resolved');
        expect(resolved).toHaveLength(1);
        const run = await store.runGet({ runId: id, namespace: NS });
        expect(run.status).toBe('SUCCEEDED');
        const source = (resolved[0]!.payload as { source: string }).source;
        expect(run.output).toBe(source === 'signal' ? 'signal' : 'timeout');
        // The timer reports a win exactly when its resolution is the one that stands.
        if (fired.get(id)) expect(source).toBe('timeout');
      }
    } finally {
      await timers.stop();
      await sweeper.stop();
    }
  }, 60_000);

  it('a deadline beyond the horizon is not held (the sweeper keeps it), and stop() drops what is held', async () => {
    const store = makeStore();
    const engine = new RunEngine({ store, registry: new Registry().register(waitGo), holder: 'replica-b', leaseTtlMs: TTL });
    const timers = new DueTimers({ driver: engine.driver, horizonMs: 50 });
    timers.start();
    await engine.runStart({ namespace: NS, workflowName: 'wait-go', input: {}, execute: true });
    expect(timers.size).toBe(0);
    await timers.stop();
    const near = new DueTimers({ driver: engine.driver, horizonMs: 60_000 });
    near.start();
    const held = once(near.events, 'held');
    await engine.runStart({ namespace: NS, workflowName: 'wait-go', input: {}, execute: true });
    await held;
    expect(near.size).toBe(1);
    await near.stop();
    expect(near.size).toBe(0);
  });

  it('a timer due while an earlier one is still being written fires without waiting for that write', async () => {
    // Before, a firing held the next timer back until all its writes were done, so a slow write
    // (a busy pool, a run-row lock) made every timer due meanwhile late by as much (issue 31 goal 1).
    let gated = '';
    const gate = deferred();
    const store = intercepted(makeStore(), ['journalResolve'], async (method, args) => {
      if ((args[0] as { runId: string }).runId === gated) await gate.promise;
      return method(...args);
    });
    const engine = new RunEngine({ store, registry: new Registry().register(waitGo), holder: 'replica-d', leaseTtlMs: TTL });
    const timers = new DueTimers({ driver: engine.driver, horizonMs: 60_000 });
    timers.start();
    const fired = new Map<string, boolean>();
    const firedNext = new Map<string, () => void>();
    timers.events.on('fired', ({ runId, applied }) => {
      fired.set(runId, applied);
      firedNext.get(runId)?.();
    });
    /** Resolves when the timer of `runId` fires (it has not yet when this is called). */
    const whenFired = (runId: string) => new Promise<void>((resolve) => firedNext.set(runId, resolve));
    try {
      const first = await engine.runStart({ namespace: NS, workflowName: 'wait-go', input: {}, execute: true });
      gated = first.run.id;
      const [due] = (await once(timers.events, 'due')) as [{ runId: string }];
      expect(due.runId).toBe(first.run.id); // its write now waits on the gate
      const firstFired = whenFired(first.run.id);
      const second = await engine.runStart({ namespace: NS, workflowName: 'wait-go', input: {}, execute: true });
      expect(second.execution?.outcome).toBe('suspended');
      const secondFired = whenFired(second.run.id);
      const stuck = new Promise<'stuck'>((resolve) => setTimeout(() => resolve('stuck'), 15_000).unref());
      expect(await Promise.race([secondFired.then(() => 'fired' as const), stuck])).toBe('fired');
      expect(fired.get(second.run.id)).toBe(true);
      expect(fired.has(first.run.id)).toBe(false); // still held at the gate
      gate.resolve();
      await firstFired;
      expect(fired.get(first.run.id)).toBe(true);
    } finally {
      gate.resolve();
      await timers.stop();
    }
  }, 30_000);

  it('a timer whose write fails (the store restarting) is left to the sweeper, with nobody listening for the failure', async () => {
    // The replica process has no `failed` listener. Before, this event was named `error`, and an
    // EventEmitter throws an unheard `error`: the firing rejected unhandled and the replica exited
    // (both replicas of test/chaos/postgres-restart.test.ts, once in ~10 runs).
    let down = false;
    const store = intercepted(makeStore(), ['journalResolve', 'journalWaits'], (method, args) =>
      (down ? Promise.reject(new Error('the database system is shutting down')) : method(...args)));
    const engine = new RunEngine({ store, registry: new Registry().register(waitGo), holder: 'replica-c', leaseTtlMs: TTL });
    const timers = new DueTimers({ driver: engine.driver, horizonMs: 60_000 });
    timers.start();
    try {
      const held = once(timers.events, 'held');
      await engine.runStart({ namespace: NS, workflowName: 'wait-go', input: {}, execute: true });
      await held;
      down = true;
      await once(timers.events, 'due');
    } finally {
      await timers.stop(); // awaits the firing: it must end, not reject
    }
    down = false;
  });
});
