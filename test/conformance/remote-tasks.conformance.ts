import { expect, it } from 'vitest';
import { RunNotFoundError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import type { RemoteToolDeclaration } from '../../src/store/store.js';
import { nextCall, startRun, step } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * Remote tools (docs/workers.md): worker declarations and liveness, and tasks claimed under a
 * fencing token (the attempt), redispatched when a claim lapses, refused from a stale holder.
 */

function declared(name: string, fields: Partial<RemoteToolDeclaration> = {}): RemoteToolDeclaration {
  return {
    name, description: `${name} tool`, inputSchema: { type: 'object' }, outputSchema: null, mutating: true, policy: 'allow',
    timeoutMs: 600_000, heartbeatTimeoutMs: 10_000, maxAttempts: 3, queue: '', ...fields,
  };
}

export function remoteTasksSection({ h }: SuiteContext): void {
  /** A run parked on a remote call of charge_back at seq 1, and its task. */
  async function parkedCall(deadlineMs = 600_000) {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({
      lease,
      entries: [step('a'), newEntry({ kind: 'tool', name: 'charge_back', status: 'suspended', contentKey: 'ck:charge', idempotencyKey: 'key-1', payload: { key: 'remote' } })],
    });
    await store.runStatusSet({ lease, status: 'SUSPENDED' });
    const now = await store.clockNow();
    const task = await store.remoteTaskCreate({
      namespace: 'default', runId: run.id, seq: 1, tool: 'charge_back', queue: '', input: { order: 'o-1' },
      idempotencyKey: 'key-1', maxAttempts: 3, heartbeatTimeoutMs: 10_000, deadlineAt: new Date(now.getTime() + deadlineMs),
    });
    return { store, run, task };
  }
  const claim = (store: ReturnType<typeof h>['store'], workerId: string) =>
    store.remoteTaskClaim({ namespace: 'default', workerId, tools: ['charge_back'], queue: '', limit: 10 });

  it('lists declared tools with their live workers; a declaration outlives its workers; the latest wins', async () => {
    const { store, advance } = h();
    expect(await store.workerHeartbeat({ namespace: 'default', workerId: 'w1', ttlMs: 5_000 })).toBe(false);
    expect(await store.workerHeartbeat({ namespace: 'default', workerId: 'w1', tools: [declared('charge_back'), declared('lookup')], ttlMs: 5_000 })).toBe(true);
    await store.workerHeartbeat({ namespace: 'default', workerId: 'w2', tools: [declared('charge_back', { description: 'newer' })], ttlMs: 20_000 });
    await store.workerHeartbeat({ namespace: 'other', workerId: 'w3', tools: [declared('elsewhere')], ttlMs: 20_000 });
    const listed = await store.remoteToolList({ namespace: 'default' });
    expect(listed.map((t) => [t.declaration.name, t.workers])).toEqual([['charge_back', ['w1', 'w2']], ['lookup', ['w1']]]);
    expect(listed[0]!.declaration).toEqual(declared('charge_back', { description: 'newer' }));
    await advance(6_000);
    expect((await store.remoteToolList({ namespace: 'default' })).map((t) => [t.declaration.name, t.workers])).toEqual([['charge_back', ['w2']], ['lookup', []]]);
    // A liveness-only heartbeat of a known worker keeps its tools.
    expect(await store.workerHeartbeat({ namespace: 'default', workerId: 'w1', ttlMs: 5_000 })).toBe(true);
    expect((await store.remoteToolList({ namespace: 'default', name: 'lookup' })).map((t) => t.workers)).toEqual([['w1']]);
    await store.workerRemove({ namespace: 'default', workerId: 'w2' });
    expect((await store.remoteToolList({ namespace: 'default', name: 'charge_back' }))[0]!.workers).toEqual(['w1']);
  });

  it('creates one task per call; a repeat returns it unchanged', async () => {
    const { store, run, task } = await parkedCall();
    expect(task).toMatchObject({ id: `${run.id}:1`, runId: run.id, seq: 1, attempt: 0, state: 'pending', holder: null, input: { order: 'o-1' }, idempotencyKey: 'key-1' });
    const params = () => ({
      namespace: 'default', runId: run.id, seq: 1, tool: 'charge_back', queue: '', input: { order: 'changed' },
      idempotencyKey: 'key-1', maxAttempts: 3, heartbeatTimeoutMs: 10_000, deadlineAt: new Date(),
    });
    const again = await store.remoteTaskCreate(params());
    expect(again).toEqual(task);
    await expect(store.remoteTaskCreate({ ...params(), runId: '018f0000-0000-7000-8000-000000000000' })).rejects.toThrow(RunNotFoundError);
    expect(await store.remoteTaskList({ runId: run.id })).toEqual([task]);
  });

  it('one claimer gets a task; a lapsed claim is redispatched with the same key under a new token; the stale holder is fenced', async () => {
    const { store, advance } = h();
    const { run } = await parkedCall();
    const [first] = await claim(store, 'w1');
    expect(first).toMatchObject({ attempt: 1, state: 'claimed', holder: 'w1', idempotencyKey: 'key-1' });
    expect(await claim(store, 'w2')).toEqual([]);
    // A heartbeat keeps it past the first timeout.
    await advance(8_000);
    expect(await store.remoteTaskHeartbeat({ namespace: 'default', taskId: first!.id, workerId: 'w1', attempt: 1 })).toMatchObject({ attempt: 1 });
    await advance(8_000);
    expect(await claim(store, 'w2')).toEqual([]);
    await advance(3_000);
    const [second] = await claim(store, 'w2');
    expect(second).toMatchObject({ id: first!.id, attempt: 2, holder: 'w2', idempotencyKey: 'key-1' });
    // The old holder's heartbeat and result are refused, and write nothing.
    expect(await store.remoteTaskHeartbeat({ namespace: 'default', taskId: first!.id, workerId: 'w1', attempt: 1 })).toBeNull();
    const before = (await store.runGet({ runId: run.id, namespace: 'default' })).nextSeq;
    expect(await store.remoteTaskComplete({ namespace: 'default', taskId: first!.id, workerId: 'w1', attempt: 1, payload: { source: 'worker', value: 'stale' }, dedupeKey: 'r1' })).toEqual({ outcome: 'fenced' });
    expect(await store.remoteTaskRetry({ namespace: 'default', taskId: first!.id, workerId: 'w1', attempt: 1, delayMs: 0, error: {} })).toBe(false);
    // A worker of another namespace naming the current holder and token is fenced.
    expect(await store.remoteTaskHeartbeat({ namespace: 'other', taskId: first!.id, workerId: 'w2', attempt: 2 })).toBeNull();
    // Another worker naming the current token is fenced too.
    expect(await store.remoteTaskComplete({ namespace: 'default', taskId: first!.id, workerId: 'w1', attempt: 2, payload: { source: 'worker', value: 'wrong worker' }, dedupeKey: 'r1' })).toEqual({ outcome: 'fenced' });
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).nextSeq).toBe(before);
    // The current holder's result is journaled as the resolution and wakes the run.
    const done = await store.remoteTaskComplete({ namespace: 'default', taskId: first!.id, workerId: 'w2', attempt: 2, payload: { source: 'worker', value: { refunded: true } }, dedupeKey: 'r2' });
    expect(done).toMatchObject({ outcome: 'resolved', resolution: { applied: true, entry: { status: 'resolved', refSeq: 1, payload: { value: { refunded: true } } } } });
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).status).toBe('PENDING');
    expect((await store.remoteTaskList({ runId: run.id }))[0]).toMatchObject({ state: 'done', holder: null });
    // Done: nothing more to claim, and a repeat of the result is fenced.
    await advance(60_000);
    expect(await claim(store, 'w3')).toEqual([]);
    expect(await store.remoteTaskComplete({ namespace: 'default', taskId: first!.id, workerId: 'w2', attempt: 2, payload: { source: 'worker', value: 'again' }, dedupeKey: 'r3' })).toEqual({ outcome: 'fenced' });
    expect((await store.journalList({ runId: run.id })).filter((e) => e.refSeq === 1)).toHaveLength(1);
  });

  it('a retryable failure makes the task pending again after its delay', async () => {
    const { store, advance } = h();
    const { task } = await parkedCall();
    await claim(store, 'w1');
    expect(await store.remoteTaskRetry({ namespace: 'default', taskId: task.id, workerId: 'w1', attempt: 1, delayMs: 5_000, error: { message: 'busy' } })).toBe(true);
    expect(await claim(store, 'w1')).toEqual([]);
    await advance(5_001);
    const [again] = await claim(store, 'w2');
    expect(again).toMatchObject({ attempt: 2, holder: 'w2', lastError: { message: 'busy' } });
  });

  it('wakes task subscribers when a task is created or retried; remoteTaskNextAt says when one becomes claimable by time alone', async () => {
    const { store, advance } = h();
    let call = nextCall<string>();
    const unsubscribe = await store.wakeupSubscribe({ onTask: (namespace) => call.fire(namespace) });
    const { task } = await parkedCall();
    expect(await call.promise).toBe('default');
    const which = { namespace: 'default', tools: ['charge_back'], queue: '' };
    expect(await store.remoteTaskNextAt(which)).toBeNull(); // claimable now, not later
    await claim(store, 'w1');
    const lapse = await store.remoteTaskNextAt(which); // the claim lapses after its 10 s heartbeat timeout
    expect(lapse).toBeGreaterThan(5_000);
    expect(lapse).toBeLessThanOrEqual(10_000);
    call = nextCall<string>();
    await store.remoteTaskRetry({ namespace: 'default', taskId: task.id, workerId: 'w1', attempt: 1, delayMs: 3_000, error: {} });
    expect(await call.promise).toBe('default');
    const backoff = await store.remoteTaskNextAt(which);
    expect(backoff).toBeGreaterThan(0);
    expect(backoff).toBeLessThanOrEqual(3_000);
    expect(await store.remoteTaskNextAt({ ...which, tools: ['lookup'] })).toBeNull();
    await advance(3_001);
    expect(await store.remoteTaskNextAt(which)).toBeNull();
    await unsubscribe();
  });

  it('a call closed otherwise (deadline passed, resolved, run ended) is not claimable; its result writes nothing', async () => {
    const { store, advance } = h();
    const { run, task } = await parkedCall(30_000);
    await claim(store, 'w1');
    // Resolved by its deadline (the sweeper's timeout resolution).
    await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: newEntry({ kind: 'tool', name: 'charge_back', status: 'resolved', payload: { source: 'timeout', timedOut: true }, dedupeKey: 'timeout:1' }) });
    expect(await store.remoteTaskHeartbeat({ namespace: 'default', taskId: task.id, workerId: 'w1', attempt: 1 })).toBeNull();
    const before = (await store.runGet({ runId: run.id, namespace: 'default' })).nextSeq;
    expect(await store.remoteTaskComplete({ namespace: 'default', taskId: task.id, workerId: 'w1', attempt: 1, payload: { source: 'worker', value: 'late' }, dedupeKey: 'r1' })).toEqual({ outcome: 'closed' });
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).nextSeq).toBe(before);

    const other = await parkedCall(30_000);
    await advance(30_001);
    expect(await claim(store, 'w1')).toEqual([]);
    const ended = await parkedCall();
    await store.runStatusForce({ runId: ended.run.id, status: 'CANCELLED' });
    expect((await claim(store, 'w1')).map((t) => t.runId)).not.toContain(ended.run.id);
    expect(other.task.state).toBe('pending');
  });
}
