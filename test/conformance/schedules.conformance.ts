import { expect, it } from 'vitest';
import { ScheduleExistsError, SweeperLeaseLostError } from '../../src/journal/errors.js';
import { emptyScheduleState, scheduleRunKey, type ScheduleRecord } from '../../src/journal/schedule.js';
import type { JournalStore, ScheduleCreateParams, ScheduleStart } from '../../src/store/store.js';
import { runParams } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * Schedules (docs/schedules.md): one per (namespace, id); every write is compare-and-set on the
 * revision; scheduleFire creates a tick's runs (once per idempotency key) and records them in the
 * state in one step, fenced by the sweeper's leader lease; the due scan skips paused schedules.
 */

function schedule(id: string, overrides: Partial<ScheduleCreateParams> = {}): ScheduleCreateParams {
  return {
    namespace: 'ns-a', id,
    spec: { cron: ['*/5 * * * *'], intervals: [{ everyMs: 1000, offsetMs: 0 }], timeZone: 'Europe/Berlin', startAt: null, endAt: null, jitterMs: 0, exclude: [] },
    action: { workflowName: 'refund', input: { order: 'o-1' }, labels: { team: 'a' }, budgetUsd: 2, timeoutMs: 60_000 },
    policies: { overlap: 'SKIP', catchupWindowMs: 60_000, pauseOnFailure: false, budgetPause: null },
    paused: false, note: '', state: emptyScheduleState(3), dueAt: new Date('2030-01-01T00:00:00Z'),
    ...overrides,
  };
}

function tickStart(id: string, scheduledAt: string, namespace = 'ns-a'): ScheduleStart {
  return { scheduledAt, cause: 'tick', run: runParams({ namespace, idempotencyKey: scheduleRunKey(id, scheduledAt) }) };
}

async function fire(store: JournalStore, s: ScheduleRecord, scheduledAt: string, leader?: { holder: string; epoch: number; expiresAt: Date }) {
  return store.scheduleFire({
    namespace: s.namespace, id: s.id, revision: s.revision, leader,
    changes: { state: { ...s.state, cursor: scheduledAt } }, starts: [tickStart(s.id, scheduledAt, s.namespace)],
  });
}

export function schedulesSection({ h }: SuiteContext): void {
  it('stores a schedule as given at revision 1; a second create of the id is ScheduleExistsError', async () => {
    const { store } = h();
    const created = await store.scheduleCreate(schedule('nightly'));
    expect(created).toMatchObject({ ...schedule('nightly'), revision: 1 });
    expect(await store.scheduleGet({ namespace: 'ns-a', id: 'nightly' })).toEqual(created);
    await expect(store.scheduleCreate(schedule('nightly', { note: 'again' }))).rejects.toBeInstanceOf(ScheduleExistsError);
    expect(await store.scheduleGet({ namespace: 'ns-b', id: 'nightly' })).toBeNull();
  });

  it('lists by id within the namespace, paged after an id; deletes once', async () => {
    const { store } = h();
    for (const id of ['c', 'a', 'b']) await store.scheduleCreate(schedule(id));
    await store.scheduleCreate(schedule('a', { namespace: 'ns-b' }));
    expect((await store.scheduleList({ namespace: 'ns-a', pageSize: 2 })).map((s) => s.id)).toEqual(['a', 'b']);
    expect((await store.scheduleList({ namespace: 'ns-a', pageSize: 2, after: 'b' })).map((s) => s.id)).toEqual(['c']);
    expect(await store.scheduleDelete({ namespace: 'ns-a', id: 'a' })).toBe(true);
    expect(await store.scheduleDelete({ namespace: 'ns-a', id: 'a' })).toBe(false);
    expect((await store.scheduleList({ namespace: 'ns-b', pageSize: 10 })).map((s) => s.id)).toEqual(['a']);
  });

  it('updates compare-and-set on the revision, keeping what it is not given', async () => {
    const { store } = h();
    const created = await store.scheduleCreate(schedule('s'));
    const paused = await store.scheduleUpdate({ namespace: 'ns-a', id: 's', revision: 1, changes: { paused: true, note: 'by ops', dueAt: null } });
    expect(paused).toMatchObject({ paused: true, note: 'by ops', dueAt: null, revision: 2, spec: created.spec, state: created.state });
    expect(await store.scheduleUpdate({ namespace: 'ns-a', id: 's', revision: 1, changes: { paused: false } })).toBeNull();
    expect(await store.scheduleUpdate({ namespace: 'ns-a', id: 'gone', revision: 1, changes: { paused: false } })).toBeNull();
    expect((await store.scheduleGet({ namespace: 'ns-a', id: 's' }))!.paused).toBe(true);
  });

  it('fires a tick: the run exists once per scheduled time and the state records it as open and recent', async () => {
    const { store } = h();
    const s = await store.scheduleCreate(schedule('s'));
    const at = '2030-01-01T00:00:00.000Z';
    const first = await fire(store, s, at);
    expect(first!.runs).toHaveLength(1);
    expect(first!.runs[0]!.created).toBe(true);
    const run = first!.runs[0]!.run;
    expect(run).toMatchObject({ namespace: 'ns-a', idempotencyKey: scheduleRunKey('s', at), status: 'PENDING' });
    expect(first!.schedule.state).toMatchObject({ cursor: at, open: [run.id], actions: 1, recent: [{ scheduledAt: at, runId: run.id, cause: 'tick' }] });
    expect(first!.schedule.revision).toBe(2);
    // A second fire of the same time (a new leader that did not see the first) finds the same run and records nothing new.
    const again = await fire(store, first!.schedule, at);
    expect(again!.runs[0]).toMatchObject({ created: false, run: { id: run.id } });
    expect(again!.schedule.state).toMatchObject({ open: [run.id], actions: 1 });
    expect((await store.runList({ namespace: 'ns-a', pageSize: 10 })).runs).toHaveLength(1);
  });

  it('a fire at a moved revision writes nothing: no run, no state', async () => {
    const { store } = h();
    const s = await store.scheduleCreate(schedule('s'));
    await store.scheduleUpdate({ namespace: 'ns-a', id: 's', revision: 1, changes: { note: 'moved' } });
    expect(await fire(store, s, '2030-01-01T00:00:00.000Z')).toBeNull();
    expect((await store.runList({ namespace: 'ns-a', pageSize: 10 })).runs).toHaveLength(0);
    expect((await store.scheduleGet({ namespace: 'ns-a', id: 's' }))!.state.actions).toBe(0);
  });

  it('a fire and a fenced update by a sweeper that lost the leader lease write nothing (SweeperLeaseLostError)', async () => {
    const { store } = h();
    const s = await store.scheduleCreate(schedule('s'));
    const old = (await store.sweeperLeaseAcquire({ holder: 'sweeper-a', ttlMs: 30_000 }))!;
    await store.sweeperLeaseRelease({ lease: old });
    const current = (await store.sweeperLeaseAcquire({ holder: 'sweeper-b', ttlMs: 30_000 }))!;
    await expect(fire(store, s, '2030-01-01T00:00:00.000Z', old)).rejects.toBeInstanceOf(SweeperLeaseLostError);
    await expect(store.scheduleUpdate({ namespace: 'ns-a', id: 's', revision: 1, changes: { note: 'x' }, leader: old }))
      .rejects.toBeInstanceOf(SweeperLeaseLostError);
    expect((await store.runList({ namespace: 'ns-a', pageSize: 10 })).runs).toHaveLength(0);
    expect((await store.scheduleGet({ namespace: 'ns-a', id: 's' }))!.revision).toBe(1);
    const fired = await fire(store, s, '2030-01-01T00:00:00.000Z', current);
    expect(fired!.runs).toHaveLength(1);
  });

  it('lists what is due within the horizon, earliest first, skipping paused and undue schedules, with the store clock', async () => {
    const { store } = h();
    const now = await store.clockNow();
    const at = (ms: number) => new Date(now.getTime() + ms);
    await store.scheduleCreate(schedule('later', { dueAt: at(-1_000) }));
    await store.scheduleCreate(schedule('first', { dueAt: at(-5_000), namespace: 'ns-b' }));
    await store.scheduleCreate(schedule('soon', { dueAt: at(2_000) }));
    await store.scheduleCreate(schedule('paused', { dueAt: at(-9_000), paused: true }));
    await store.scheduleCreate(schedule('ended', { dueAt: null }));
    await store.scheduleCreate(schedule('far', { dueAt: at(3_600_000) }));
    const due = await store.scheduleListDue({ horizonMs: 0, limit: 10 });
    expect(due.schedules.map((s) => s.id)).toEqual(['first', 'later']);
    expect(Math.abs(due.now.getTime() - now.getTime())).toBeLessThan(60_000);
    expect((await store.scheduleListDue({ horizonMs: 5_000, limit: 10 })).schedules.map((s) => s.id)).toEqual(['first', 'later', 'soon']);
    expect((await store.scheduleListDue({ horizonMs: 5_000, limit: 1 })).schedules.map((s) => s.id)).toEqual(['first']);
  });

  it('scheduleRuns reads the given runs of the namespace only', async () => {
    const { store } = h();
    const a = (await store.runCreate(runParams({ namespace: 'ns-a' }))).run;
    const b = (await store.runCreate(runParams({ namespace: 'ns-b' }))).run;
    const runs = await store.scheduleRuns({ namespace: 'ns-a', runIds: [a.id, b.id, 'not-a-run'] });
    expect(runs.map((r) => r.id)).toEqual([a.id]);
  });
}
