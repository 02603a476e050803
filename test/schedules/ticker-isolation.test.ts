import { describe, expect, it } from 'vitest';
import { scheduleHarness } from './schedule-harness.js';

/*
 * One schedule whose runs cannot be stored (its input passes the workflow's schema but not the
 * payload limit: written before a limit was lowered, or by a caller past the API's checks) must
 * not stop the ticker for the others: its pass fails alone, and it is paused with a note saying
 * why instead of failing every look.
 */

const T0 = '2030-01-01T00:00:00.000Z';

describe('the ticker, with a schedule whose run cannot be stored', () => {
  it('keeps ticking the others and pauses that one with a note', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ id: 'a-too-big', action: { workflowName: 'job', input: { n: 1, pad: 'x'.repeat(1_100_000) }, labels: {}, budgetUsd: null, timeoutMs: null } });
    await h.create({ policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 60_000, pauseOnFailure: false, budgetPause: null } });
    await h.walk(3, 1_000);
    expect(await h.scheduledTimes()).toEqual(['2030-01-01T00:00:01.000Z', '2030-01-01T00:00:02.000Z', '2030-01-01T00:00:03.000Z']);
    const big = await h.get('a-too-big');
    expect(big.paused).toBe(true);
    expect(big.note).toMatch(/^paused: its run cannot be stored: .*1048576/);
    expect(big.state.actions).toBe(0);
  });
});
