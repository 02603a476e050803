import { JournalFullError, RunNotFoundError, RunStateError } from '../../journal/errors.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import { isTerminalStatus, type RunStatus } from '../../journal/run.js';
import type {
  JournalAppendParams, JournalCostTotalsParams, JournalCostTotalsResult, JournalListParams, JournalResolveParams,
  JournalResolveResult, JournalSpendParams, JournalSpendResult, JournalWait, JournalWaitsParams,
} from '../journal-params.js';
import { isRunId } from '../run-id.js';
import { notASuspension } from '../store-errors.js';
import { assertEntriesFit, suspensionDeadline } from '../write-checks.js';
import type { AppendBatcher, AppendRequest } from './append-batcher.js';
import { outOfLinePayloads, type OutOfLinePayload } from '../payload-refs.js';
import * as jq from './journal-queries.js';
import * as pq from './payloads-queries.js';
import type { PgAccess } from './pg-access.js';
import { isUnavailable, sqlState, translatePgError } from './pg-errors.js';
import * as rq from './runs-queries.js';

/* PostgresStore's journal: appends (alone or group-committed), reads and resolutions (JournalOps in journal-params.ts documents each). */

export async function journalAppend(db: PgAccess, batcher: AppendBatcher | null, params: JournalAppendParams): Promise<JournalEntry[]> {
  const sizes = assertEntriesFit(params.entries, db.limits);
  const deadlines = params.entries.map(suspensionDeadline);
  const { lease, entries } = params;
  if (!isRunId(lease.runId)) throw new RunNotFoundError(lease.runId);
  const payloads = outOfLinePayloads(entries, sizes, db.limits);
  const bytes = sizes.reduce((a, b) => a + b, 0);
  // An append with a large payload goes alone: it is rare, and it would swell a group commit's statement.
  if (payloads) return appendOne(db, { lease, entries, deadlines, bytes }, payloads);
  if (batcher && entries.length > 0) return batcher.append({ lease, entries, deadlines, bytes });
  return appendOne(db, { lease, entries, deadlines, bytes });
}

async function appendOne(db: PgAccess, { lease, entries, deadlines, bytes }: AppendRequest, payloads?: (OutOfLinePayload | null)[]): Promise<JournalEntry[]> {
  const { runId, epoch } = lease;
  const maxEntries = db.limits.journalEntries;
  const maxBytes = db.limits.journalBytes;
  const query = payloads ? pq.journalAppendPayloads({ runId, epoch, entries, deadlines, maxEntries, payloads, bytes, maxBytes })
    : entries.length === 1 && deadlines[0] === null
      ? jq.journalAppendSingle({ runId, epoch, entry: entries[0]!, maxEntries, bytes, maxBytes })
      : jq.journalAppend({ runId, epoch, entries, deadlines, maxEntries, bytes, maxBytes });
  const { rows } = await db.query<jq.AppendedRow>(query, { runId });
  const appended = jq.appendedEntries(rows[0]?.run_id ?? runId, entries, rows);
  if (appended) return appended;
  const failure = await db.fenceFailure(lease, entries.length, undefined, bytes);
  if (failure) throw failure;
  return [];
}

/**
 * Appends of several runs in one statement (the AppendBatcher's send). A run its fence refused gets
 * its own error, as appendOne would give it. A statement the server rejected (a value Postgres
 * cannot store in one of the runs) was rolled back whole: each append is then sent on its own, so
 * only the culprit fails.
 */
export async function appendBatch(db: PgAccess, batch: AppendRequest[]): Promise<(JournalEntry[] | { error: unknown })[]> {
  const settle = (r: AppendRequest) => appendOne(db, r).then((e) => e, (error: unknown) => ({ error }));
  if (batch.length === 1) return [await settle(batch[0]!)];
  let rows: jq.AppendedRow[];
  try {
    rows = (await db.pool.query<jq.AppendedRow>(jq.journalAppendMany({
      requests: batch.map((r) => ({ runId: r.lease.runId, epoch: r.lease.epoch, entries: r.entries, deadlines: r.deadlines, bytes: r.bytes })),
      maxEntries: db.limits.journalEntries, maxBytes: db.limits.journalBytes,
    }))).rows;
  } catch (err) {
    if (sqlState(err) !== undefined && !isUnavailable(err)) return Promise.all(batch.map(settle));
    throw translatePgError(err, {});
  }
  const byRun = new Map<string, jq.AppendedRow[]>();
  for (const row of rows) {
    const got = byRun.get(row.run_id);
    if (got) got.push(row);
    else byRun.set(row.run_id, [row]);
  }
  return Promise.all(batch.map(async (r) => {
    const runId = r.lease.runId.toLowerCase();
    const appended = jq.appendedEntries(runId, r.entries, byRun.get(runId) ?? []);
    if (appended) return appended;
    const failure = await db.fenceFailure(r.lease, r.entries.length, undefined, r.bytes).catch((error: unknown) => error as Error);
    return failure ? { error: failure } : [];
  }));
}

export async function journalList(db: PgAccess, params: JournalListParams): Promise<JournalEntry[]> {
  if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
  const { rows } = await db.query<jq.JournalRow>(jq.journalList({
    runId: params.runId, afterSeq: params.afterSeq ?? -1, limit: params.limit ?? null, namespace: params.namespace ?? null,
    refs: params.payloads === 'reference',
  }));
  if (rows.length === 0) await db.findRun(params.runId, params.namespace ?? null);
  return jq.pageEntries(rows, params.runId);
}

export async function journalCostTotals(db: PgAccess, params: JournalCostTotalsParams): Promise<JournalCostTotalsResult> {
  const ids = params.runIds.filter(isRunId);
  const totals = new Map<string, number>();
  if (ids.length === 0) return totals;
  const { rows } = await db.query<{ id: string; total: string }>(jq.journalCostTotals({ runIds: ids, namespace: params.namespace ?? null }));
  // Ids as the caller spelled them (the database returns them lowercase).
  const byLower = new Map(rows.map((r) => [r.id.toLowerCase(), Number(r.total)]));
  for (const id of ids) {
    const total = byLower.get(id.toLowerCase());
    if (total !== undefined) totals.set(id, total);
  }
  return totals;
}

export async function journalWaits(db: PgAccess, params: JournalWaitsParams): Promise<JournalWait[]> {
  await db.findRun(params.runId, params.namespace); // throws RunNotFoundError
  const { rows } = await db.query<{ entry: jq.JournalRow; referrers: jq.JournalRow[] }>(jq.journalWaits({ runId: params.runId, seq: params.seq ?? null }));
  return rows.map((row) => ({ entry: jq.toEntry(row.entry), referrers: row.referrers.map(jq.toEntry) }));
}

export async function journalSpend(db: PgAccess, params: JournalSpendParams): Promise<JournalSpendResult> {
  if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
  const { rows } = await db.query<{ runs: number; own: string; children: string; priced: number; reserved: string }>(jq.journalSpend(params));
  const row = rows[0];
  if (!row || row.runs === 0) throw new RunNotFoundError(params.runId);
  return { ownUsd: Number(row.own), childrenUsd: Number(row.children), pricedCalls: row.priced, reservedUsd: Number(row.reserved) };
}

/**
 * Under the run-row lock (FOR NO KEY UPDATE, the lock fenced writes take), in three statements:
 * lock, read the facts (a fresh READ COMMITTED snapshot that includes every resolution committed
 * before the lock was granted), write. test/conformance "applies one of many concurrent resolutions".
 */
export async function journalResolve(db: PgAccess, params: JournalResolveParams): Promise<JournalResolveResult> {
  const { runId, suspensionSeq } = params;
  if (!isRunId(runId)) throw new RunNotFoundError(runId);
  assertEntriesFit([params.entry], db.limits, 'entry');
  return db.transaction(async (client) => {
    if (params.leader) await db.sweeperFence(client, params.leader);
    const locked = (await client.query<{ status: RunStatus; next_seq: number }>(rq.runLockForResolve(runId, params.namespace ?? null))).rows[0];
    if (!locked) throw new RunNotFoundError(runId);
    const facts = (await client.query<{ duplicate: jq.JournalRow | null; target_status: string | null; winner: jq.JournalRow | null }>(
      jq.journalResolveFacts({ runId, suspensionSeq, dedupeKey: params.entry.dedupeKey }))).rows[0]!;
    if (facts.duplicate) {
      const first = jq.toEntry(facts.duplicate);
      const winnerRow = first.refSeq === suspensionSeq ? facts.winner
        : first.refSeq === null ? null : (await client.query<jq.JournalRow>(jq.journalWinner({ runId, suspensionSeq: first.refSeq }))).rows[0];
      const winner = winnerRow ? jq.toEntry(winnerRow) : first;
      return { entry: first, applied: first.status === 'resolved', duplicate: true, winner };
    }
    if (isTerminalStatus(locked.status)) throw new RunStateError(runId, locked.status, 'not finished');
    if (facts.target_status !== 'suspended') throw notASuspension(runId, suspensionSeq);
    if (locked.next_seq + 1 > db.limits.journalEntries) throw new JournalFullError(runId, db.limits.journalEntries);
    const applied = facts.winner === null;
    const [row] = (await client.query<jq.JournalRow>(jq.journalResolveInsert({ runId, suspensionSeq, applied, entry: params.entry }))).rows;
    const entry = jq.toEntry(row!);
    const winner = applied ? entry : jq.toEntry(facts.winner!);
    if (!applied || !params.leaseFor) return { entry, applied, duplicate: false, winner };
    // The take, in the same transaction (as signalDeliver's): a SUSPENDED run went PENDING just above (RUNNING stays flagged).
    const [taken] = (await client.query<{ run: rq.RunRow; entry: jq.JournalRow }>(rq.runLeaseAcquireRunning({
      runId, holder: params.leaseFor.holder, ttlMs: params.leaseFor.ttlMs, statuses: ['PENDING'], namespace: null, routing: params.leaseFor.routing,
    }))).rows;
    return { entry, applied, duplicate: false, winner, taken: taken ? rq.takenOf(taken) : null };
  }, { runId });
}
