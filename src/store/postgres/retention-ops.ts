import type { RunCostDaily, RunCostDailyListParams, RunPurgeParams, RunPurgeResult } from '../retention-params.js';
import type { PgAccess } from './pg-access.js';
import * as q from './retention-queries.js';

/*
 * PostgresStore's retention (RetentionOps in retention-params.ts documents each method). A batch is
 * one transaction under the sweeper's lock_timeout: it locks the roots it picks and their
 * descendants with SKIP LOCKED, so it never queues behind a writer, adds them to the cost roll-up
 * and deletes them. Writers never wait on it either: it touches only finished runs, whose rows
 * nobody but a resume or another purge locks (test/store/retention-load.test.ts measures it).
 */

export async function runPurge(db: PgAccess, params: RunPurgeParams): Promise<RunPurgeResult> {
  const none: RunPurgeResult = { roots: [], runIds: [], entries: 0, oldestEnd: null, newestEnd: null };
  if (params.limit <= 0) return none;
  const scan = {
    olderThanMs: Math.max(0, Math.trunc(params.olderThanMs)), namespace: params.namespace ?? null, except: params.exceptNamespaces ?? [],
    statuses: params.statuses ?? null, workflowName: params.workflowName ?? null, limit: params.limit,
  };
  if (params.dryRun) {
    const found = (await db.query<RootRow>(q.purgeRoots({ ...scan, lock: false }))).rows;
    const roots = found.map((r) => r.id);
    const trees = purgeableTrees(roots, (await db.query<TreeRow>(q.purgeTrees(roots))).rows, null);
    const runIds = trees.flatMap((t) => t.ids);
    const entries = runIds.length ? (await db.query<{ n: number }>(q.purgeEntryCount(runIds))).rows[0]!.n : 0;
    return { roots: trees.map((t) => t.root), runIds, entries, ...ends(found, trees) };
  }
  return db.transaction(async (client) => {
    await client.query(`SET LOCAL lock_timeout = ${Math.trunc(db.sweeperLockTimeoutMs)}`);
    if (params.leader) await db.sweeperFence(client, params.leader);
    const found = (await client.query<RootRow>(q.purgeRoots({ ...scan, lock: true }))).rows;
    const roots = found.map((r) => r.id);
    if (roots.length === 0) return none;
    const rows = (await client.query<TreeRow>(q.purgeTrees(roots))).rows;
    const descendants = rows.filter((r) => r.id !== r.root).map((r) => r.id);
    const locked = descendants.length ? new Set((await client.query<{ id: string }>(q.purgeLockRuns(descendants))).rows.map((r) => r.id)) : new Set<string>();
    for (const root of roots) locked.add(root);
    const trees = purgeableTrees(roots, rows, locked);
    const runIds = trees.flatMap((t) => t.ids);
    if (runIds.length === 0) return none;
    const entries = (await client.query<{ n: number }>(q.purgeEntryCount(runIds))).rows[0]!.n;
    await client.query(q.purgeCostRollup(runIds));
    for (const statement of q.purgeSideRows(runIds)) await client.query(statement);
    await client.query(q.purgeRuns(runIds));
    return { roots: trees.map((t) => t.root), runIds, entries, ...ends(found, trees) };
  });
}

export async function runCostDailyList(db: PgAccess, params: RunCostDailyListParams): Promise<RunCostDaily[]> {
  const { rows } = await db.query<q.RunCostDailyRow>(q.runCostDailyList({
    namespace: params.namespace ?? null, workflowName: params.workflowName ?? null, fromDay: params.fromDay ?? null, toDay: params.toDay ?? null,
  }));
  return rows.map((r) => ({
    namespace: r.namespace, workflowName: r.workflow_name, day: r.day, runs: Number(r.runs), modelCalls: Number(r.model_calls),
    costUsd: Number(r.cost_usd), inputTokens: Number(r.input_tokens), outputTokens: Number(r.output_tokens),
  }));
}

interface TreeRow { root: string; id: string; purgeable: boolean }
interface RootRow { id: string; updated_at: Date }

/** When the first and the last of the trees' roots ended (`found` is oldest end first). */
function ends(found: RootRow[], trees: { root: string }[]): Pick<RunPurgeResult, 'oldestEnd' | 'newestEnd'> {
  const kept = new Set(trees.map((t) => t.root));
  const times = found.filter((r) => kept.has(r.id)).map((r) => new Date(r.updated_at));
  return { oldestEnd: times[0] ?? null, newestEnd: times.at(-1) ?? null };
}

/** The trees of `roots` (in their order) whose every run may go and, when `locked` is given, is locked by this batch. */
function purgeableTrees(roots: string[], rows: TreeRow[], locked: Set<string> | null): { root: string; ids: string[] }[] {
  const byRoot = new Map<string, TreeRow[]>();
  for (const row of rows) byRoot.set(row.root, [...(byRoot.get(row.root) ?? []), row]);
  return roots.flatMap((root) => {
    const tree = byRoot.get(root) ?? [];
    const whole = tree.length > 0 && tree.every((r) => r.purgeable && (locked === null || locked.has(r.id)));
    // Children first, though one DELETE checks the parent key only at its end either way.
    return whole ? [{ root, ids: tree.map((r) => r.id).reverse() }] : [];
  });
}
