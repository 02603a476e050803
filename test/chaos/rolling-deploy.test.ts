import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWaymarkClient, fromValue, type WaymarkClient } from '../../clients/ts/src/index.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { ChaosCluster, chaosEnv, kill } from './support/cluster.js';

/*
 * A rolling deploy with real processes (issue 29; docs/recovery.md "Routing"): replica A serves
 * version 1 of `rolling`, replica B version 2 (another digest). Runs of both versions park on an
 * approval. While A lives, v1 runs approved through B are executed by A (B does not take them: no
 * RUNNING entry on B's account). Then A is SIGKILLed and the remaining v1 runs are approved through
 * B: once A's presence lapses, B continues them on version 2 (drift `warn`), journaling the drift and
 * re-pinning them. Oracles: every effect applied once per logical effect (the sink), every RUNNING
 * entry followed by work rather than by another RUNNING (no take-and-hand-back), the drift entry,
 * and GetRun's digest.
 */

const V1 = path.resolve('test/chaos/fixtures/rolling-v1.ts');
const V2 = path.resolve('test/chaos/fixtures/rolling-v2.ts');
/** A killed replica's presence lapses this long after its last heartbeat (default 15 s); long enough that a live one's does not on a loaded machine. */
const ENV = { WAYMARK_REPLICA_TTL_MS: '6000' };
const RUNS = 4; // per version and phase

let cluster: ChaosCluster;

beforeAll(async () => {
  cluster = await ChaosCluster.open('waymark_chaos_rolling', ENV);
});

afterAll(async () => {
  await cluster?.close();
});

async function replica(workflows: string): Promise<{ p: WaymarkProcess; client: WaymarkClient }> {
  const p = WaymarkProcess.start(['server'], { env: chaosEnv(cluster.db.url, { ...ENV, WAYMARK_WORKFLOWS: workflows }) });
  cluster.servers.push(p);
  const address = await p.listening();
  await p.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('replica registered'));
  return { p, client: createWaymarkClient({ address }) };
}

/** Starts runs through `client` (pinned to its replica's digest) and waits until each parked on its approval. */
async function parked(client: WaymarkClient, tags: string[]): Promise<{ id: string; digest: string; approvalId: string }[]> {
  const runs: { id: string; digest: string; tag: string }[] = [];
  for (const tag of tags) {
    const { run } = await client.startRun('rolling', { sink: cluster.sink.url, tag }, { idempotencyKey: `rolling-${tag}` });
    runs.push({ id: run.id, digest: run.workflowDigest, tag });
  }
  await cluster.driver.waitUntil(async () => (await cluster.driver.statuses(runs.map((r) => r.id))).SUSPENDED === runs.length, 60_000);
  const out: { id: string; digest: string; approvalId: string }[] = [];
  for (const r of runs) {
    let approvalId = '';
    for await (const approval of client.listApprovals({ runId: r.id })) approvalId = approval.id;
    out.push({ id: r.id, digest: r.digest, approvalId });
  }
  return out;
}

/** Status entries per run, in order: `RUNNING`, `SUSPENDED`, `drift`, ... and what follows each RUNNING. */
async function statusTrail(ids: string[]): Promise<Map<string, { names: string[]; runningThenRunning: number; drift: unknown[] }>> {
  const { rows } = await cluster.driver.pool.query<{ run_id: string; seq: number; kind: string; name: string; payload: unknown }>(
    'SELECT run_id, seq, kind, name, payload FROM journal WHERE run_id = ANY($1::uuid[]) ORDER BY run_id, seq', [ids]);
  const trail = new Map<string, { names: string[]; runningThenRunning: number; drift: unknown[] }>();
  let previous: { run_id: string; kind: string; name: string } | null = null;
  for (const row of rows) {
    const t = trail.get(row.run_id) ?? { names: [], runningThenRunning: 0, drift: [] };
    trail.set(row.run_id, t);
    if (row.kind === 'status') t.names.push(row.name);
    if (row.kind === 'status' && row.name === 'drift') t.drift.push((row.payload as { drift: unknown }).drift);
    // A RUNNING entry right after another (or as a run's last entry) is an execution that did nothing: a take handed back.
    if (previous && previous.run_id === row.run_id && previous.kind === 'status' && previous.name === 'RUNNING' && row.kind === 'status' && row.name === 'RUNNING') t.runningThenRunning++;
    previous = row;
  }
  return trail;
}

describe('rolling deploy: two versions side by side, the old replica SIGKILLed', () => {
  it('each run executes on its digest while that replica lives, continues on the new one after (drift journaled), every effect once', async () => {
    const a = await replica(V1);
    const b = await replica(V2);
    const v1Tags = Array.from({ length: RUNS }, (_, i) => `v1-live-${i}`);
    const v1LateTags = Array.from({ length: RUNS }, (_, i) => `v1-late-${i}`);
    const v2Tags = Array.from({ length: RUNS }, (_, i) => `v2-${i}`);
    const v1Runs = await parked(a.client, [...v1Tags, ...v1LateTags]);
    const v2Runs = await parked(b.client, v2Tags);
    const [d1, d2] = [v1Runs[0]!.digest, v2Runs[0]!.digest];
    expect(d1).not.toBe(d2);
    expect(new Set(v1Runs.map((r) => r.digest))).toEqual(new Set([d1]));

    // Phase 1, both alive: v1 runs approved through B (and v2 runs through A) finish on their own digest.
    const live = v1Runs.slice(0, RUNS);
    for (const r of live) await b.client.approve(r.approvalId, { by: 'ops' });
    for (const r of v2Runs) await a.client.approve(r.approvalId, { by: 'ops' });
    await cluster.driver.waitEnded([...live, ...v2Runs].map((r) => r.id), 60_000);
    for (const r of live) {
      const got = (await b.client.getRun(r.id)).run;
      expect({ output: fromValue(got.output), digest: got.workflowDigest }).toEqual({ output: { approved: true, version: 'v1' }, digest: d1 });
    }
    for (const r of v2Runs) expect(fromValue((await a.client.getRun(r.id)).run.output)).toEqual({ approved: true, version: 'v2' });

    // Phase 2: the old replica dies; the rest of its runs are approved through the new one.
    await kill(a.p);
    const late = v1Runs.slice(RUNS);
    for (const r of late) await b.client.approve(r.approvalId, { by: 'ops' });
    await cluster.driver.waitEnded(late.map((r) => r.id), 90_000);

    const all = [...v1Runs, ...v2Runs].map((r) => r.id);
    expect(await cluster.driver.statuses(all)).toEqual({ SUCCEEDED: all.length });
    for (const r of late) {
      const got = (await b.client.getRun(r.id)).run;
      expect({ output: fromValue(got.output), digest: got.workflowDigest }).toEqual({ output: { approved: true, version: 'v2' }, digest: d2 });
    }
    const trail = await statusTrail(all);
    const reasons = 'no live replica serves the digest the run was pinned to';
    for (const r of late) expect(trail.get(r.id)!.drift).toEqual([{ from: d1, to: d2, policy: 'warn', reason: reasons }]);
    for (const r of [...live, ...v2Runs]) expect(trail.get(r.id)!.drift).toEqual([]);
    const handedBack = [...trail.values()].reduce((n, t) => n + t.runningThenRunning, 0);
    const runningEntries = [...trail.values()].reduce((n, t) => n + t.names.filter((s) => s === 'RUNNING').length, 0);
    const expected = [...v1Tags, ...v1LateTags, ...v2Tags].flatMap((tag) => [`${tag}:before`, `${tag}:after`]);
    const figures = cluster.sink.figures(expected, 'v');
    console.log(`chaos: rolling-deploy runs=${all.length} running_entries=${runningEntries} (2 per run expected) ` +
      `running_then_running=${handedBack} drifted=${late.length} duplicates=${figures.duplicates} lost=${figures.lost} redundant=${figures.redundant}`);
    expect(handedBack).toBe(0);
    // Each run executed twice: up to its approval, then after it; nothing else wrote RUNNING.
    expect(runningEntries).toBe(2 * all.length);
    expect(figures).toMatchObject({ duplicates: 0, lost: 0, unkeyed: 0 });
    expect(await cluster.driver.journalViolations(all)).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
  }, 300_000);
});
