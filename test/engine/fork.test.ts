import { describe, expect, it } from 'vitest';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { InvalidForkError } from '../../src/engine/errors.js';
import { forkPlan } from '../../src/engine/replay/fork-plan.js';
import { schemaHash } from '../../src/engine/replay/content-key.js';
import { newEntry, type JournalEntry, type NewJournalEntry } from '../../src/journal/journal-entry.js';
import { anyInput, EffectSink, journal, NS, setup, shape } from './harness.js';

/*
 * ForkRun's engine side (docs/forks.md "What a fork keeps"): the plan over hand-made journals, and
 * real forks on the memory store proving that no effect the source recorded before the fork point
 * runs again in the fork, a handled error included, while the effects after it are the fork's own.
 */

const SOURCE = '018f0000-0000-7000-8000-00000000000a';
const APPROVAL_SCHEMA = { type: 'object', properties: { approved: { type: 'boolean' }, comment: { type: 'string' } }, required: ['approved'] };

function entries(list: NewJournalEntry[]): JournalEntry[] {
  return list.map((e, seq) => ({ ...e, runId: SOURCE, seq, createdAt: new Date(0) }));
}

const running = newEntry({ kind: 'status', name: 'RUNNING', status: 'info', payload: { status: 'RUNNING' } });
const head = (name: string, fields: Partial<NewJournalEntry> = {}) => newEntry({ kind: 'tool', name, status: 'running', contentKey: `ck:${name}`, idempotencyKey: `src:${name}`, ...fields });
const done = (name: string, refSeq: number) => newEntry({ kind: 'tool', name, status: 'ok', contentKey: `ck:${name}`, refSeq, payload: { done: name } });

describe('the fork plan', () => {
  // 0 RUNNING, 1 a (parallel branch 0) intent, 2 b (branch 1) intent, 3 b ok, 4 a ok, 5 child wait,
  // 6 approval, 7 approval resolved, 8 child resolved, 9 SUSPENDED status
  const journalOf = entries([
    running, head('a', { scope: 'par:0:0' }), head('b', { scope: 'par:0:1' }), done('b', 2), done('a', 1),
    newEntry({ kind: 'child', name: 'kid', status: 'suspended', contentKey: 'ck:kid', payload: { key: 'kid', title: '', schema: {}, schemaHash: '', onTimeout: null } }),
    newEntry({ kind: 'approval', name: 'ok?', status: 'suspended', contentKey: 'ck:ok', payload: { key: 'ok?', title: 'ok?', schema: APPROVAL_SCHEMA, schemaHash: schemaHash(APPROVAL_SCHEMA), onTimeout: null } }),
    newEntry({ kind: 'approval', name: 'ok?', status: 'resolved', refSeq: 6, payload: { source: 'human', value: { approved: true } } }),
    newEntry({ kind: 'child', name: 'kid', status: 'resolved', refSeq: 5, payload: { source: 'child', value: 'kid' } }),
    newEntry({ kind: 'status', name: 'SUSPENDED', status: 'info', payload: { status: 'SUSPENDED' } }),
  ]);

  it('moves a fork point inside an effect to its first entry and keeps everything before it at the same seqs', () => {
    const plan = forkPlan({ sourceRunId: SOURCE, entries: journalOf, at: 3 });
    expect(plan.forkSeq).toBe(2);
    expect(plan.kept).toBe(2);
    expect(plan.dropped).toBe(8);
    expect(plan.journal.slice(0, 2)).toEqual(journalOf.slice(0, 2).map(({ runId: _r, seq: _s, createdAt: _c, ...e }) => e));
    // a's intent was in flight at the fork point (its outcome is at seq 4): cancelled, so the fork runs it as its own.
    expect(plan.rerun).toEqual([1]);
    expect(plan.journal.slice(2).map((e) => [e.kind, e.name, e.status, e.refSeq])).toEqual([['status', 'fork', 'info', null], ['tool', 'a', 'cancelled', 1]]);
    expect(plan.journal[2]!.payload).toEqual({ fork: { from: SOURCE, seq: 2, continued: [] } });
  });

  it("cancels a wait on the source's child; an open approval stays open; trailing status changes are not kept", () => {
    const plan = forkPlan({ sourceRunId: SOURCE, entries: journalOf, at: 7 });
    expect(plan.forkSeq).toBe(6);
    expect(plan.rerun).toEqual([5]);
    expect(plan.journal.map((e) => `${e.status} ${e.kind} ${e.name}`).slice(6)).toEqual(['info status fork', 'cancelled child kid']);
    const whole = forkPlan({ sourceRunId: SOURCE, entries: journalOf, at: 9 });
    expect(whole.kept).toBe(9);
    expect(whole.rerun).toEqual([]);
  });

  it('a decision at the fork point keeps the approval and resolves it; it is refused elsewhere, as is a seq past the journal', () => {
    const plan = forkPlan({ sourceRunId: SOURCE, entries: journalOf, at: 6, decision: { approve: false, by: 'ann', comment: 'no' } });
    expect(plan.kept).toBe(7);
    expect(plan.journal.at(-1)).toMatchObject({ kind: 'approval', status: 'resolved', refSeq: 6, payload: { source: 'human', value: { approved: false, comment: 'no' }, by: 'ann' } });
    expect(() => forkPlan({ sourceRunId: SOURCE, entries: journalOf, at: 3, decision: { approve: true, by: 'ann' } })).toThrow(InvalidForkError);
    expect(() => forkPlan({ sourceRunId: SOURCE, entries: journalOf, at: 10 })).toThrow(InvalidForkError);
    expect(() => forkPlan({ sourceRunId: SOURCE, entries: journalOf, at: -1 })).toThrow(InvalidForkError);
  });
});

describe('a fork on the engine', () => {
  it('re-executes no effect the source recorded before the fork point, a handled error included; the effects after it are its own', async () => {
    const sink = new EffectSink();
    const flow = defineWorkflow({ name: 'fork-handled', input: anyInput }, async (ctx) => {
      const charged = await ctx.step('charge', (info) => {
        sink.deliver('charge', info.idempotencyKey);
        return 'charged';
      });
      let failed = false;
      try {
        await ctx.step('flaky', (info) => {
          sink.deliver('flaky', info.idempotencyKey);
          throw new Error('the downstream is down');
        });
      } catch {
        failed = true;
      }
      await ctx.step('after', (info) => sink.deliver('after', info.idempotencyKey));
      return { charged, failed };
    });
    const { engine, store } = setup([flow]);
    const source = await engine.runStart({ namespace: NS, workflowName: 'fork-handled', input: {}, execute: true });
    expect(source.run.status).toBe('SUCCEEDED');
    const before = await journal(store, source.run.id);
    const after = before.find((e) => e.name === 'after')!;

    const preview = await engine.runForkPreview({ namespace: NS, sourceRunId: source.run.id, at: after.seq });
    expect(preview.replay.items.map((i) => `${i.outcome} ${i.name}`)).toEqual(['HIT charge', 'HIT flaky', 'MISS after']);

    const fork = await engine.runFork({ namespace: NS, sourceRunId: source.run.id, at: after.seq });
    expect(fork.run.status).toBe('SUCCEEDED');
    expect(fork.run.output).toEqual({ charged: 'charged', failed: true });
    expect([sink.count('charge'), sink.count('flaky'), sink.count('after')]).toEqual([1, 1, 2]);
    expect(sink.keysOf('after').size).toBe(2); // the fork's own effect, under its own key
    expect(shape(await journal(store, fork.run.id))).toEqual(shape(before));
    expect(await journal(store, source.run.id)).toEqual(before);
    expect(await store.runForks({ runId: source.run.id, namespace: NS, limit: 10 })).toEqual([fork.run.id]);
  });
});
