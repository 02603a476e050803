import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { pino } from 'pino';
import { RunEngine } from '../../src/engine/run-engine.js';
import { ReplicaEngine } from '../../src/engine/replica-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { ENTRY_BYTES, type ResumeCacheOptions } from '../../src/engine/runtime/resume-cache.js';
import { RunNotFoundError } from '../../src/journal/errors.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { JournalListParams, JournalStore } from '../../src/store/store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { until } from '../support/until.js';
import { EffectSink, NS, TTL } from './harness.js';

/*
 * Hot resume (runtime/resume-cache.ts, docs/recovery.md "Hot resume"): a run that parked on this
 * engine resumes here from the journal it parked with, reading only what others wrote since (and
 * nothing when this engine wrote it), and reads the whole journal whenever another lease holder
 * came in between (another replica on the same database, an epoch moved), or the kept journal was
 * evicted. Every journal read of the engine under test is counted; both stores.
 */

const sink = new EffectSink();

/** `rounds` times: wait for `go`, then one step; returns what the signals carried. */
const loop = defineWorkflow({ name: 'loop', input: z.object({ rounds: z.number() }) }, async (ctx, { rounds }) => {
  const got: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const { n } = await ctx.signal('go', { schema: z.object({ n: z.number() }) });
    got.push(await ctx.step(`step-${i}`, ({ idempotencyKey }) => {
      sink.deliver(`step-${i}`, idempotencyKey);
      return n * 10;
    }));
  }
  return { got };
});

/** Waits for an approval and a signal at once: CancelRun closes both. */
const twoWaits = defineWorkflow({ name: 'two-waits', input: z.object({ steps: z.number() }) }, async (ctx, { steps }) => {
  for (let i = 0; i < steps; i++) await ctx.step(`s-${i}`, () => i);
  await Promise.all([ctx.approve({ title: 'ok?' }), ctx.signal('go')]);
  return 'done';
});

/** One step whose result is `size` characters, then two waits: a run that parks twice holding that payload. */
const heavy = defineWorkflow({ name: 'heavy', input: z.object({ size: z.number() }) }, async (ctx, { size }) => {
  const text = await ctx.step('text', () => 'x'.repeat(size));
  await ctx.signal('go');
  await ctx.signal('go');
  return text.length;
});

interface Reads {
  /** journalList calls: afterSeq (-1: the whole journal) and the rows it returned. */
  calls: { afterSeq: number; rows: number }[];
  /** suspensionOpenOldest calls (signalSend's look-up of the wait a signal goes to). */
  lookups: number;
  /** Lease takes outside a delivery: runLeaseAcquire, runLeaseAcquireRunning, runClaim. */
  takes: number;
  rows(): number;
  reset(): void;
}

/** The store with its journal reads counted (what the engine under test reads). */
function counted(store: JournalStore): { store: JournalStore; reads: Reads } {
  const reads: Reads = {
    calls: [],
    rows: () => reads.calls.reduce((n, c) => n + c.rows, 0),
    reset: () => {
      reads.calls.splice(0);
      reads.lookups = 0;
      reads.takes = 0;
    },
    lookups: 0,
    takes: 0,
  };
  const wrapped = new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (key === 'runLeaseAcquire' || key === 'runLeaseAcquireRunning' || key === 'runClaim') {
        return (...args: unknown[]) => {
          reads.takes++;
          return method(...args);
        };
      }
      if (key === 'suspensionOpenOldest') {
        return (...args: unknown[]) => {
          reads.lookups++;
          return method(...args);
        };
      }
      if (key !== 'journalList') return method;
      return async (params: JournalListParams) => {
        const entries = await target.journalList(params);
        reads.calls.push({ afterSeq: params.afterSeq ?? -1, rows: entries.length });
        return entries;
      };
    },
  });
  return { store: wrapped, reads };
}

function engineOn(store: JournalStore, holder: string, resumeCache?: ResumeCacheOptions) {
  const { store: seen, reads } = counted(store);
  const engine = new RunEngine({ store: seen, registry: new Registry().register(loop, twoWaits, heavy), holder, leaseTtlMs: TTL, ...(resumeCache ? { resumeCache } : {}) });
  return { engine, reads };
}

type Open = () => Promise<JournalStore>;

const stores: [string, () => { open: Open; close: () => Promise<void> }][] = [
  ['MemoryStore', () => {
    const store = new MemoryStore();
    return { open: async () => store, close: async () => {} };
  }],
  ['PostgresStore', () => {
    const opened: PostgresStore[] = [];
    return {
      // Each call is another connection pool on the same database: another replica.
      open: async () => {
        const store = await PostgresStore.connect({ url: db.url, applicationName: 'resume-cache', poolSize: 3 });
        opened.push(store);
        return store;
      },
      close: async () => {
        await Promise.all(opened.splice(0).map((s) => s.close()));
      },
    };
  }],
];

let db: MigratedDatabase;
beforeAll(async () => {
  db = await createMigratedDatabase('waymark_resume_cache');
});
afterAll(async () => {
  await db?.drop();
});

describe.each(stores)('hot resume on %s', (_name, make) => {
  /** A `loop` run started here that parked, resumed once (the first resume reads: a run created here kept nothing) and parked again. */
  function parkedTwice(engine: RunEngine, rounds: number) {
    return parkedTwiceAs(engine, 'loop', { rounds });
  }

  /** The same for any workflow that waits for `go` twice. */
  async function parkedTwiceAs(engine: RunEngine, workflowName: string, input: Record<string, number>) {
    const { run, execution } = await engine.runStart({ namespace: NS, workflowName, input, execute: true });
    expect(execution?.outcome).toBe('suspended');
    await engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: { n: 1 }, signalId: `${run.id}-1` });
    expect((await engine.runExecute({ runId: run.id, namespace: NS }))?.outcome).toBe('suspended');
    return run.id;
  }

  it('resumes a run that parked here without reading a journal row, and ends as a cold replay would', async () => {
    const { open, close } = make();
    try {
      const store = await open();
      const { engine, reads } = engineOn(store, 'replica-a');
      const runId = await parkedTwice(engine, 3);
      for (const n of [2, 3]) {
        await engine.signalSend({ runId, namespace: NS, name: 'go', payload: { n }, signalId: `${runId}-${n}` });
        reads.reset();
        const result = await engine.runExecute({ runId, namespace: NS });
        expect(result?.outcome).toBe(n === 3 ? 'succeeded' : 'suspended');
        expect(reads.calls).toEqual([]);
      }
      expect((await store.runGet({ runId, namespace: NS })).output).toEqual({ got: [10, 20, 30] });
      expect(engine.resumes.stats).toMatchObject({ hits: 2 });
      for (const step of ['step-0', 'step-1', 'step-2']) expect(sink.keysOf(step).size).toBe(sink.count(step));
    } finally {
      await close();
    }
  });

  it('sends a signal to a run parked here without looking its wait up; a stale guess still lands right', async () => {
    const { open, close } = make();
    try {
      const a = engineOn(await open(), 'replica-a');
      const b = engineOn(await open(), 'replica-b');
      const runId = await parkedTwice(a.engine, 3);
      a.reads.reset();
      const sent = await a.engine.signalSend({ runId, namespace: NS, name: 'go', payload: { n: 2 }, signalId: `${runId}-2` });
      expect(sent).toMatchObject({ applied: true, buffered: false });
      expect(a.reads.lookups).toBe(0);
      expect((await a.engine.runExecute({ runId, namespace: NS }))?.outcome).toBe('suspended');
      // B closes the wait A saw the run park on; A's guess is now stale: the signal is buffered, as with a look-up.
      await b.engine.signalSend({ runId, namespace: NS, name: 'go', payload: { n: 3 }, signalId: `${runId}-3` });
      const late = await a.engine.signalSend({ runId, namespace: NS, name: 'go', payload: { n: 4 }, signalId: `${runId}-4` });
      expect(late).toMatchObject({ applied: false, buffered: true });
      await expect(a.engine.signalSend({ runId, namespace: 'elsewhere', name: 'go', payload: { n: 5 }, signalId: `${runId}-5` }))
        .rejects.toBeInstanceOf(RunNotFoundError);
      expect((await a.engine.runExecute({ runId, namespace: NS }))?.outcome).toBe('succeeded');
      expect((await a.engine.store.runGet({ runId, namespace: NS })).output).toEqual({ got: [10, 20, 30] });
      expect(await a.engine.store.signalInboxList({ runId })).toMatchObject([{ signalId: `${runId}-4` }]);
    } finally {
      await close();
    }
  });

  it('a SendSignal takes the lease with the delivery: the run continues on the replica that got it, no claim to race', async () => {
    const { open, close } = make();
    try {
      const a = engineOn(await open(), 'replica-a');
      const b = engineOn(await open(), 'replica-b');
      const api = new ReplicaEngine({ engine: a.engine, logger: pino({ enabled: false }) });
      const runId = await parkedTwice(a.engine, 3);
      a.reads.reset();
      const sent = await api.signalSend({ runId, namespace: NS, name: 'go', payload: { n: 2 }, signalId: `${runId}-2` });
      expect(sent.taken?.lease).toMatchObject({ runId, holder: 'replica-a' });
      // Never PENDING: B's executor finds nothing to claim, whenever it looks.
      expect(await b.engine.runExecutePending({ namespace: NS })).toEqual([]);
      await until('the run parked again on A', async () => ((await a.engine.store.runGet({ runId, namespace: NS })).status === 'SUSPENDED' ? true : undefined));
      expect(a.reads).toMatchObject({ calls: [], lookups: 0, takes: 0 });
      const journal = await a.engine.store.journalList({ runId });
      expect(journal.filter((e) => e.kind === 'status').map((e) => e.name)).not.toContain('PENDING');
      expect(journal.filter((e) => e.kind === 'step').map((e) => e.payload)).toEqual([10, 20]);
      await api.stop({ graceMs: 1_000 });
    } finally {
      await close();
    }
  });

  it('reads only the entries written since by others (a signal sent through another replica)', async () => {
    const { open, close } = make();
    try {
      const a = engineOn(await open(), 'replica-a');
      const b = engineOn(await open(), 'replica-b');
      const runId = await parkedTwice(a.engine, 2);
      const { entry } = await b.engine.signalSend({ runId, namespace: NS, name: 'go', payload: { n: 2 }, signalId: `${runId}-2` });
      a.reads.reset();
      expect((await a.engine.runExecute({ runId, namespace: NS }))?.outcome).toBe('succeeded');
      // The resolution B wrote and A's RUNNING entry after it: two rows, from the resolution on.
      expect(a.reads.calls).toEqual([{ afterSeq: entry!.seq - 1, rows: 2 }]);
      expect((await a.engine.store.runGet({ runId, namespace: NS })).output).toEqual({ got: [10, 20] });
    } finally {
      await close();
    }
  });

  it('never uses what it kept after another replica executed the run in between: it replays the whole journal', async () => {
    const { open, close } = make();
    try {
      const a = engineOn(await open(), 'replica-a');
      const b = engineOn(await open(), 'replica-b');
      const runId = await parkedTwice(a.engine, 3);
      const before = sink.count('step-1');
      // Forced interleaving: B resumes the run A parked, executes a step and parks it again.
      await a.engine.signalSend({ runId, namespace: NS, name: 'go', payload: { n: 2 }, signalId: `${runId}-2` });
      expect((await b.engine.runExecute({ runId, namespace: NS }))?.outcome).toBe('suspended');
      expect(sink.count('step-1')).toBe(before + 1);
      await a.engine.signalSend({ runId, namespace: NS, name: 'go', payload: { n: 3 }, signalId: `${runId}-3` });
      const misses = a.engine.resumes.stats.misses;
      a.reads.reset();
      expect((await a.engine.runExecute({ runId, namespace: NS }))?.outcome).toBe('succeeded');
      const length = (await a.engine.store.journalList({ runId })).length;
      expect(a.reads.calls).toHaveLength(2); // the resume's whole-journal read, and this test's own just above
      expect(a.reads.calls[0]!.afterSeq).toBe(-1);
      expect(a.reads.calls[0]!.rows).toBeGreaterThan(length - 3); // all but the step and the status written after the read
      expect(a.engine.resumes.stats.misses).toBe(misses + 1);
      // B's step was replayed from the journal on A, not executed again.
      expect(sink.count('step-1')).toBe(before + 1);
      expect((await a.engine.store.runGet({ runId, namespace: NS })).output).toEqual({ got: [10, 20, 30] });
    } finally {
      await close();
    }
  });

  it('replays the whole journal when the epoch moved with no entry written (a lease taken and given back)', async () => {
    const { open, close } = make();
    try {
      const store = await open();
      const a = engineOn(store, 'replica-a');
      const runId = await parkedTwice(a.engine, 2);
      const taken = await store.runLeaseAcquire({ runId, holder: 'someone-else', ttlMs: TTL, statuses: ['SUSPENDED'] });
      expect(taken).not.toBeNull();
      await store.runLeaseRelease({ lease: taken! }); // PENDING again; nothing journaled
      await a.engine.signalSend({ runId, namespace: NS, name: 'go', payload: { n: 2 }, signalId: `${runId}-2` });
      a.reads.reset();
      expect((await a.engine.runExecute({ runId, namespace: NS }))?.outcome).toBe('succeeded');
      expect(a.reads.calls.map((c) => c.afterSeq)).toEqual([-1]);
      expect((await store.runGet({ runId, namespace: NS })).output).toEqual({ got: [10, 20] });
    } finally {
      await close();
    }
  });

  it('evicts the least recently parked run past its bound, and that run then replays the whole journal', async () => {
    const { open, close } = make();
    try {
      const store = await open();
      // A parked `loop` run after one round holds 8 entries: room for one run, not two.
      const a = engineOn(store, 'replica-a', { maxEntries: 10 });
      const first = await parkedTwice(a.engine, 2);
      expect(a.engine.resumes.stats).toMatchObject({ runs: 1, entries: 8, evictions: 0 });
      const second = await parkedTwice(a.engine, 2);
      expect(a.engine.resumes.stats).toMatchObject({ runs: 1, entries: 8, evictions: 1 });
      for (const runId of [first, second]) {
        await a.engine.signalSend({ runId, namespace: NS, name: 'go', payload: { n: 2 }, signalId: `${runId}-2` });
        a.reads.reset();
        expect((await a.engine.runExecute({ runId, namespace: NS }))?.outcome).toBe('succeeded');
        expect(a.reads.calls.map((c) => c.afterSeq)).toEqual(runId === first ? [-1] : []);
      }
      const off = engineOn(store, 'replica-off', { maxEntries: 0 });
      await parkedTwice(off.engine, 2);
      expect(off.engine.resumes.stats).toMatchObject({ runs: 0, entries: 0 });
    } finally {
      await close();
    }
  });

  it('is bounded by bytes too: payloads journaled plus a cost per entry; a run over the bound is never kept', async () => {
    const { open, close } = make();
    try {
      const store = await open();
      const a = engineOn(store, 'replica-bytes', { maxBytes: 30_000 });
      const parkedHeavy = (size: number) => parkedTwiceAs(a.engine, 'heavy', { size });
      const first = await parkedHeavy(10_000);
      const one = a.engine.resumes.stats;
      expect(one).toMatchObject({ runs: 1, evictions: 0 });
      // The step's result (10,002 bytes of JSON) and 400 bytes for each entry kept.
      expect(one.bytes).toBe((await store.runGet({ runId: first, namespace: NS })).journalBytes + one.entries * ENTRY_BYTES);
      expect(one.bytes).toBeGreaterThan(10_002);
      await parkedHeavy(10_000);
      expect(a.engine.resumes.stats).toMatchObject({ runs: 2, bytes: 2 * one.bytes, evictions: 0 });
      await parkedHeavy(10_000); // past 30,000: the least recently parked goes
      expect(a.engine.resumes.stats).toMatchObject({ runs: 2, bytes: 2 * one.bytes, evictions: 1 });
      const big = await parkedHeavy(40_000); // over the bound by itself: never kept, nothing evicted for it
      expect(a.engine.resumes.stats).toMatchObject({ runs: 2, evictions: 1 });
      for (const runId of [first, big]) {
        await a.engine.signalSend({ runId, namespace: NS, name: 'go', payload: null, signalId: `${runId}-2` });
        a.reads.reset();
        expect((await a.engine.runExecute({ runId, namespace: NS }))?.outcome).toBe('succeeded');
        expect(a.reads.calls.map((c) => c.afterSeq)).toEqual([-1]); // neither was kept: the whole journal is read
      }
      const off = engineOn(store, 'replica-bytes-off', { maxBytes: 0 });
      await parkedTwice(off.engine, 2);
      expect(off.engine.resumes.stats).toMatchObject({ runs: 0, entries: 0, bytes: 0 });
    } finally {
      await close();
    }
  });

  it('CancelRun and ResumeRun read no journal: open waits come from journalWaits', async () => {
    const { open, close } = make();
    try {
      const store = await open();
      const a = engineOn(store, 'replica-a');
      const { run } = await a.engine.runStart({ namespace: NS, workflowName: 'two-waits', input: { steps: 20 }, execute: true });
      a.reads.reset();
      await a.engine.runResume({ runId: run.id, namespace: NS, execute: false });
      expect(a.reads.calls).toEqual([]);
      expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('PENDING');
      expect((await a.engine.runExecutePending({ namespace: NS })).map((r) => r.outcome)).toEqual(['suspended']);
      await a.engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: 1, signalId: `${run.id}-go` });
      a.reads.reset();
      const { run: cancelled } = await a.engine.runCancel({ runId: run.id, namespace: NS, reason: 'enough' });
      expect(a.reads.calls).toEqual([]);
      expect(cancelled.status).toBe('CANCELLED');
      const journal = await store.journalList({ runId: run.id });
      const approval = journal.find((e) => e.kind === 'approval' && e.status === 'suspended')!;
      const closing = journal.filter((e) => e.status === 'cancelled');
      // The approval was open: closed with the run's reason. The signal wait was resolved: left alone.
      expect(closing.map((e) => [e.kind, e.refSeq, e.idempotencyKey, e.payload])).toEqual([
        ['approval', approval.seq, approval.idempotencyKey, { reason: 'run_cancelled', seq: approval.seq, message: 'enough' }],
      ]);
    } finally {
      await close();
    }
  });
});
