import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EFFECT_BOUNDARIES, type EffectBoundary } from '../../src/engine/runtime/crashpoint.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { EffectSink } from './support/effect-sink.js';
import { chaosEnv, Driver, FULL, percentile, startServer, startSweeper } from './support/cluster.js';

/*
 * The core exactly-once test (reliability.md §4.2). For each cell a server runs the matrix flow
 * with WAYMARK_CRASHPOINT armed and dies by SIGKILL at that effect boundary; a sweeper on another
 * process recovers the run once its lease expires, and a fresh replica finishes it. The sink then
 * says whether any effect was applied twice or never, and whether an effect was delivered more than
 * once outside the documented window (after its intent, before its terminal entry). The flow's
 * effects, in order: tool 1 charge, the model call (the sink is the model endpoint), tool 2 the
 * child's effect, tool 3 ship.
 */

interface Cell { kind: 'tool' | 'model'; boundary: EffectBoundary; nth: number }
const SHORT: Cell[] = [
  { kind: 'tool', boundary: 'before-intent', nth: 1 },
  { kind: 'model', boundary: 'after-intent', nth: 1 },
  { kind: 'model', boundary: 'after-execute', nth: 1 },
  { kind: 'tool', boundary: 'after-execute', nth: 2 },
  { kind: 'tool', boundary: 'after-terminal', nth: 3 },
];
const HITS: Pick<Cell, 'kind' | 'nth'>[] = [{ kind: 'tool', nth: 1 }, { kind: 'model', nth: 1 }, { kind: 'tool', nth: 2 }, { kind: 'tool', nth: 3 }];
const CELLS: Cell[] = FULL ? EFFECT_BOUNDARIES.flatMap((boundary) => HITS.map((h) => ({ ...h, boundary }))) : SHORT;
const EFFECTS = ['charge', 'model', 'kid', 'ship'];
/** The only boundary where the crashed effect had reached the world without its terminal entry. */
const IN_WINDOW: EffectBoundary = 'after-execute';

let db: TestDatabase;
let driver: Driver;
let sink: EffectSink;
let sweeper: WaymarkProcess;

beforeAll(async () => {
  db = await createTestDatabase('waymark_chaos_matrix');
  sink = await EffectSink.start();
  sweeper = await startSweeper(chaosEnv(db.url)); // migrates the database too
  driver = await Driver.open(db.url);
});

afterAll(async () => {
  await sweeper?.stop();
  await driver?.close();
  await sink?.close();
  await db?.drop();
});

interface CellResult { cell: string; duplicates: number; lost: number; redundant: number; unkeyed: number; recoveryMs: number; spurious: number }

/** One cell: crash at `cell`, recover on another replica, and read the sink. */
async function runCell(cell: Cell, tag: string, unsafeEnv: Record<string, string> = {}): Promise<CellResult & { output: unknown; journal: Awaited<ReturnType<Driver['journalViolations']>> }> {
  const extraEnv = { WAYMARK_MODEL_BASE_URL: `${sink.url}/v1`, ...unsafeEnv };
  const runId = await driver.start('chaos-matrix', { sink: sink.url, tag });
  const crashing = await startServer(chaosEnv(db.url, { WAYMARK_CRASHPOINT: `${cell.kind}:${cell.boundary}:${cell.nth}`, ...extraEnv }));
  const exit = await crashing.exited;
  expect(exit.signal).toBe('SIGKILL');
  expect(crashing.logs.some((l) => l.msg === 'crashpoint hit')).toBe(true);
  const crashedAt = await driver.dbNow();
  const replica = await startServer(chaosEnv(db.url, extraEnv));
  try {
    await driver.waitEnded([runId], 120_000);
  } finally {
    await replica.stop();
  }
  const recovery = await driver.firstAppendAfter([runId], crashedAt);
  // Recoveries of this run or its child, from the sweeper's own log: one is the crash's; any more
  // are spurious takeovers (a live owner's renewal starved on a loaded machine), which are safe but
  // may redeliver an effect in the window too.
  const family = new Set([runId, ...(await driver.pool.query<{ id: string }>('SELECT id FROM runs WHERE parent_run_id = $1', [runId])).rows.map((r) => r.id)]);
  const recoveries = sweeper.logs.filter((l) => l.msg === 'sweep acted').flatMap((l) => l.recovered as string[]).filter((id) => family.has(id)).length;
  const run = await driver.store.runGet({ runId, namespace: 'default' });
  const figures = sink.figures(EFFECTS.map((e) => `${tag}:${e}`), `${tag}:`);
  return {
    cell: `${cell.kind}:${cell.boundary}:${cell.nth}`, ...figures, recoveryMs: recovery.get(runId) ?? Number.NaN, spurious: Math.max(0, recoveries - 1),
    output: run.status === 'SUCCEEDED' ? run.output : run.status, journal: await driver.journalViolations([runId]),
  };
}

describe('crash matrix: SIGKILL at every effect boundary, recovered by the sweeper on another replica', () => {
  it(`${CELLS.length} cells: no effect applied twice or lost; redeliveries only in the documented window, under one key`, async () => {
    const results: CellResult[] = [];
    for (const [i, cell] of CELLS.entries()) {
      const r = await runCell(cell, `m${i}`);
      results.push(r);
      expect(r.output, r.cell).toEqual({ approved: true, kid: 'kid' });
      expect(r.journal, r.cell).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
      expect({ duplicates: r.duplicates, lost: r.lost, unkeyed: r.unkeyed }, r.cell).toEqual({ duplicates: 0, lost: 0, unkeyed: 0 });
      // A redelivery is the crashed effect in the window between intent and terminal (plus, at most
      // one per spurious takeover, an effect a live owner had in that window).
      const inWindow = cell.boundary === IN_WINDOW ? 1 : 0;
      expect(r.redundant, r.cell).toBeGreaterThanOrEqual(inWindow);
      expect(r.redundant, r.cell).toBeLessThanOrEqual(inWindow + r.spurious);
    }
    const sum = (k: keyof CellResult) => results.reduce((n, r) => n + (r[k] as number), 0);
    const recovery = results.map((r) => r.recoveryMs).filter((ms) => Number.isFinite(ms));
    console.log(`chaos: crash-matrix cells=${results.length} effects=${results.length * EFFECTS.length} duplicates=${sum('duplicates')} ` +
      `lost=${sum('lost')} redundant_deliveries=${sum('redundant')} (expected ${results.filter((r) => r.cell.includes(IN_WINDOW)).length}) ` +
      `unkeyed=${sum('unkeyed')} spurious_takeovers=${sum('spurious')} recovery_ms(incl. replica start) p50=${percentile(recovery, 50).toFixed(0)} p99=${percentile(recovery, 99).toFixed(0)}`);
  }, 90_000 + CELLS.length * 45_000);

  it('negative control: an idempotency key derived with the lease epoch is caught as a duplicate', async () => {
    // WAYMARK_UNSAFE_KEY_WITH_EPOCH makes the redispatch after the crash present a new key
    // (src/engine/runtime/crashpoint.ts); a matrix that cannot see this would prove nothing.
    const r = await runCell({ kind: 'tool', boundary: 'after-execute', nth: 1 }, 'neg', { WAYMARK_UNSAFE_KEY_WITH_EPOCH: '1' });
    console.log(`chaos: crash-matrix negative-control (key with epoch) duplicates=${r.duplicates} redundant_deliveries=${r.redundant} lost=${r.lost}`);
    expect(r.duplicates).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
