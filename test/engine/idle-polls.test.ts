import { expect, it, vi } from 'vitest';
import { newEntry } from '../../src/journal/journal-entry.js';
import { Registry } from '../../src/engine/registry.js';
import { RemoteCalls } from '../../src/engine/runtime/remote-calls.js';
import { WorkerTasks } from '../../src/engine/runtime/worker-tasks.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { RemoteTask } from '../../src/store/store.js';
import { settle, useFakeTimers } from './harness.js';
import { startRun } from '../conformance/harness.js';

/*
 * Idle PollTask long polls cost nothing while nothing happens (issue 29 item 6): a poll that found
 * no task waits on the store's task wake-up (or the time a task becomes claimable by itself), not
 * on a timer per poll that looks at the store. The clock is faked, so "idle for 10 s" is exact and
 * nothing sleeps: the claims N idle polls issue over the window must not grow with N (they were
 * N every 250 ms). The task is created straight in the store, as another replica would.
 */

useFakeTimers();

const tool = {
  name: 'charge_back', description: 'charge back', inputSchema: null, outputSchema: null, mutating: true, policy: 'allow' as const,
  timeoutMs: 600_000, heartbeatTimeoutMs: 10_000, maxAttempts: 3, queue: '',
};

async function idleClaims(n: number): Promise<{ claims: number; claimed: number }> {
  const store = new MemoryStore();
  const workers = new WorkerTasks(store, new Registry(), new RemoteCalls(store));
  await workers.register({ namespace: 'default', workerId: 'w1', tools: [tool], ttlMs: 600_000 });
  let claims = 0;
  const claim = store.remoteTaskClaim.bind(store);
  store.remoteTaskClaim = (params) => {
    claims += 1;
    return claim(params);
  };
  const abort = new AbortController();
  const got: (RemoteTask | null)[] = [];
  const polls = Array.from({ length: n }, async () => {
    got.push(await workers.poll({ namespace: 'default', workerId: 'w1', tools: [], queue: '', waitMs: 30_000, signal: abort.signal }));
  });
  await settle(); // every poll looks once and finds nothing
  const looked = claims;
  await vi.advanceTimersByTimeAsync(10_000);
  const idle = claims - looked;
  // Still live: a task created in the store (as by another replica) is claimed by one poll at once.
  const { run, lease } = await startRun(store);
  await store.journalAppend({ lease, entries: [newEntry({ kind: 'tool', name: 'charge_back', status: 'suspended', contentKey: 'ck', idempotencyKey: 'k', payload: null })] });
  await store.runStatusSet({ lease, status: 'SUSPENDED' });
  await store.remoteTaskCreate({
    namespace: 'default', runId: run.id, seq: 0, tool: 'charge_back', queue: '', input: null, idempotencyKey: 'k',
    maxAttempts: 3, heartbeatTimeoutMs: 10_000, deadlineAt: new Date(Date.now() + 600_000),
  });
  await settle();
  const claimed = got.filter((t) => t !== null).length;
  abort.abort();
  await Promise.all(polls);
  return { claims: idle, claimed };
}

it('1 and 200 idle long polls look at the store not once over 10 s, and a new task is still claimed at once', async () => {
  expect(await idleClaims(1)).toEqual({ claims: 0, claimed: 1 });
  expect(await idleClaims(200)).toEqual({ claims: 0, claimed: 1 });
});
