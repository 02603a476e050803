import { expect, it } from 'vitest';
import { runFollow, type FollowItem } from '../../src/store/run-follow.js';
import type { NewModelDelta } from '../../src/store/store.js';
import type { SuiteContext } from './journal-store.conformance.js';
import { startRun, step } from './harness.js';

/*
 * Model call deltas (docs/agents.md "Token streams"): offsets dense per run from 0 in the order
 * batches were stored, an onDelta wake-up per batch, retention by age that never reuses an offset,
 * and runFollow weaving deltas after their call's entry, resumable from (seq, offset).
 */

function texts(...words: string[]): NewModelDelta[] {
  return words.map((text, i) => ({ index: i, kind: i === 0 ? 'start' : 'text', text: i === 0 ? '' : text, toolCallId: null, toolName: null }));
}

async function collect(it: AsyncIterable<FollowItem>, n: number): Promise<FollowItem[]> {
  const out: FollowItem[] = [];
  for await (const item of it) {
    out.push(item);
    if (out.length === n) break;
  }
  return out;
}

function describe(items: FollowItem[]): string[] {
  return items.map((i) => (i.entry ? `e${i.entry.seq}` : `d${i.delta!.offset}@${i.delta!.entrySeq}:${i.delta!.attempt}:${i.delta!.text}`));
}

export function modelDeltasSection({ h }: SuiteContext): void {
  it('stores deltas at dense offsets in order across calls and batches, and lists them after an offset', async () => {
    const { store } = h();
    const { run } = await startRun(store);
    await store.modelDeltaAppend({ runId: run.id, entrySeq: 1, attempt: 1, deltas: texts('', 'Hello ', 'world') });
    await store.modelDeltaAppend({ runId: run.id, entrySeq: 2, attempt: 1, deltas: texts('') });
    await store.modelDeltaAppend({ runId: run.id, entrySeq: 1, attempt: 1, deltas: [{ index: 3, kind: 'tool_input', text: '{"q":', toolCallId: 'c1', toolName: 'search' }] });
    const all = await store.modelDeltaList({ runId: run.id, afterOffset: -1, limit: 100 });
    expect(all.map((d) => [d.offset, d.entrySeq, d.attempt, d.index, d.kind, d.text])).toEqual([
      [0, 1, 1, 0, 'start', ''], [1, 1, 1, 1, 'text', 'Hello '], [2, 1, 1, 2, 'text', 'world'], [3, 2, 1, 0, 'start', ''], [4, 1, 1, 3, 'tool_input', '{"q":'],
    ]);
    expect(all[4]).toMatchObject({ runId: run.id, toolCallId: 'c1', toolName: 'search' });
    expect((await store.modelDeltaList({ runId: run.id, afterOffset: 2, limit: 1 })).map((d) => d.offset)).toEqual([3]);
  });

  it('wakes onDelta subscribers of the run, not onRun ones', async () => {
    const { store } = h();
    const { run } = await startRun(store);
    const woken: string[] = [];
    let fired!: () => void;
    const delta = new Promise<void>((r) => (fired = r));
    const stop = await store.wakeupSubscribe({ runId: run.id, onDelta: (id) => { woken.push(`delta ${id}`); fired(); }, onRun: (id) => woken.push(`run ${id}`) });
    await store.modelDeltaAppend({ runId: run.id, entrySeq: 1, attempt: 1, deltas: texts('') });
    await delta;
    await stop();
    expect(woken).toEqual([`delta ${run.id}`]);
  });

  it('deletes deltas stored before a time, and the run\'s next delta still gets the next offset', async () => {
    const { store } = h();
    const { run } = await startRun(store);
    await store.modelDeltaAppend({ runId: run.id, entrySeq: 1, attempt: 1, deltas: texts('', 'a', 'b') });
    const now = (await store.clockNow()).getTime();
    expect(await store.modelDeltaSweep({ before: new Date(now - 3_600_000), limit: 10 })).toBe(0);
    expect(await store.modelDeltaSweep({ before: new Date(now + 3_600_000), limit: 2 })).toBe(2);
    expect(await store.modelDeltaSweep({ before: new Date(now + 3_600_000), limit: 10 })).toBe(1);
    await store.modelDeltaAppend({ runId: run.id, entrySeq: 1, attempt: 2, deltas: texts('') });
    expect((await store.modelDeltaList({ runId: run.id, afterOffset: -1, limit: 10 })).map((d) => d.offset)).toEqual([3]);
  });

  it('runFollow puts each delta after its call\'s entry and before the entries written after it, and resumes from (seq, offset)', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('before')] }); // 0
    await store.journalAppend({ lease, entries: [step('model-call', { status: 'running' })] }); // 1
    await store.modelDeltaAppend({ runId: run.id, entrySeq: 1, attempt: lease.epoch, deltas: texts('', 'one ', 'two') });
    await store.journalAppend({ lease, entries: [step('model-call', { refSeq: 1 })] }); // 2
    const abort = new AbortController();
    const e = lease.epoch;
    const first = await collect(runFollow({ store, runId: run.id, afterSeq: -1, afterOffset: -1, signal: abort.signal }), 6);
    expect(describe(first)).toEqual(['e0', 'e1', `d0@1:${e}:`, `d1@1:${e}:one `, `d2@1:${e}:two`, 'e2']);
    // Resumed after entry 1 and delta 1: the rest once, then live deltas and entries as they come.
    const rest = collect(runFollow({ store, runId: run.id, afterSeq: 1, afterOffset: 1, signal: abort.signal }), 4);
    await store.journalAppend({ lease, entries: [step('model-call-2', { status: 'running' })] }); // 3
    await store.modelDeltaAppend({ runId: run.id, entrySeq: 3, attempt: e, deltas: texts('') });
    expect(describe(await rest)).toEqual([`d2@1:${e}:two`, 'e2', 'e3', `d3@3:${e}:`]);
    abort.abort();
  });
}
