import { RunEngine, Registry, Schedules } from '../../src/engine/index.js';
import { emptyScheduleState, SCHEDULED_AT_LABEL, type ScheduleRecord } from '../../src/journal/schedule.js';
import type { Run } from '../../src/journal/run.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { ScheduleCreate } from '../../src/engine/index.js';
import { Sweeper } from '../../src/sweeper/sweeper.js';
import { FakeClock } from '../engine/harness.js';

/*
 * A memory store on an injected clock, one replica's presence serving `job` (so the ticker, which
 * executes nothing, can start its runs for it), a sweeper that leads, and the ScheduleService use
 * cases. Tests move the clock and call look(): the ticker's one look, as its timer would.
 */
export async function scheduleHarness(start: string) {
  const clock = new FakeClock(start);
  const store = new MemoryStore({ clock: clock.now });
  await store.replicaHeartbeat({
    replicaId: 'replica-1', ttlMs: 10 * 365 * 86_400_000,
    workflows: [{ name: 'job', version: '1', digest: 'sha256:job', drift: 'warn', description: '', inputSchema: { type: 'object', required: ['n'] } }],
  });
  const sweeper = new Sweeper({ store, holder: 'sweeper-1', leaderTtlMs: 10 * 365 * 86_400_000, schedules: { watchMs: 200 } });
  await sweeper.sweepOnce();
  const runs = new RunEngine({ store, registry: new Registry(), holder: 'api', leaseTtlMs: 30_000 });
  const schedules = new Schedules({ store, runs });
  const h = {
    store, sweeper, schedules, runs,
    now: clock.now,
    /** Moves the store's clock by `ms`. */
    advance: (ms: number) => clock.advance(ms),
    set: (iso: string) => clock.advance(Date.parse(iso) - clock.now().getTime()),
    /** The watch of an open run comes round (watchMs 200): the clock moves 200 ms, one look. */
    async watch() {
      h.advance(200);
      await h.look();
    },
    /** The ticker's one look (what its in-memory timer triggers). */
    look: () => sweeper.schedules!.lookOnce(),
    /** Moves the clock `steps` times by `stepMs`, looking after each step. */
    async walk(steps: number, stepMs: number) {
      for (let i = 0; i < steps; i++) {
        h.advance(stepMs);
        await h.look();
      }
    },
    async create(overrides: Partial<ScheduleCreate> = {}): Promise<ScheduleRecord> {
      return (await schedules.create({
        namespace: 'default', id: 's1', paused: false, note: '', remainingActions: null,
        spec: { cron: [], intervals: [{ everyMs: 1_000, offsetMs: 0 }], timeZone: 'UTC', startAt: null, endAt: null, jitterMs: 0, exclude: [] },
        action: { workflowName: 'job', input: { n: 1 }, labels: { team: 'a' }, budgetUsd: null, timeoutMs: null },
        policies: { overlap: 'SKIP', catchupWindowMs: 60_000, pauseOnFailure: false, budgetPause: null },
        ...overrides,
      })).schedule;
    },
    async get(id = 's1'): Promise<ScheduleRecord> {
      return (await schedules.get({ namespace: 'default', id })).schedule;
    },
    /** The schedule's runs, by scheduled time (runs created at one clock instant list in no set order). */
    async runsOf(): Promise<Run[]> {
      const { runs: found } = await store.runList({ namespace: 'default', labels: { 'waymark.schedule_id': 's1' }, pageSize: 1000 });
      const at = (r: Run) => `${r.labels[SCHEDULED_AT_LABEL]}${r.createdAt.toISOString()}`;
      return found.sort((a, b) => (at(a) < at(b) ? -1 : at(a) > at(b) ? 1 : 0));
    },
    async scheduledTimes(): Promise<string[]> {
      return (await h.runsOf()).map((r) => r.labels[SCHEDULED_AT_LABEL]!);
    },
    /** Ends a run as its execution would (a forced status, as an operator's cancel is). */
    async end(run: Run, status: 'SUCCEEDED' | 'FAILED' = 'SUCCEEDED') {
      await store.runStatusForce({ runId: run.id, status, ...(status === 'FAILED' ? { error: { name: 'Error', message: 'boom' } } : { output: null }) });
    },
  };
  return h;
}

export { emptyScheduleState };
