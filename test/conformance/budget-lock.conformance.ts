import { expect, it } from 'vitest';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * budgetLock: budget admission over one run tree is serialised (docs/agents.md "Budget admission").
 * A second caller for the same tree waits until the first releases; other trees do not wait.
 */

/** Whether `p` settles within a few event-loop turns and 50 ms (a lock that is free resolves at once). */
async function settlesSoon(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void p.then(() => { settled = true; }, () => { settled = true; });
  await new Promise((r) => setTimeout(r, 50));
  return settled;
}

export function budgetLockSection({ h }: SuiteContext): void {
  it('a second caller for the same tree waits for the first release; release is idempotent', async () => {
    const { store } = h();
    const first = await store.budgetLock({ namespace: 'default', rootRunId: 'run-a' });
    const second = store.budgetLock({ namespace: 'default', rootRunId: 'run-a' });
    expect(await settlesSoon(second)).toBe(false);
    await first.release();
    await first.release();
    const held = await second;
    const third = store.budgetLock({ namespace: 'default', rootRunId: 'run-a' });
    expect(await settlesSoon(third)).toBe(false);
    await held.release();
    await (await third).release();
  });

  it('other trees and other namespaces do not wait', async () => {
    const { store } = h();
    const a = await store.budgetLock({ namespace: 'default', rootRunId: 'run-a' });
    try {
      // Both are granted while run-a's lock is still held (were they queued behind it, this would
      // never resolve and the test would time out).
      const [b, c] = await Promise.all([
        store.budgetLock({ namespace: 'default', rootRunId: 'run-b' }),
        store.budgetLock({ namespace: 'other', rootRunId: 'run-a' }),
      ]);
      await Promise.all([b.release(), c.release()]);
    } finally {
      await a.release();
    }
  });
}
