import { JournalFullError, RunNotFoundError, RunStateError } from '../../journal/errors.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import { isTerminalStatus, type RunStatus } from '../../journal/run.js';
import { assertPageSize } from '../run-cursor.js';
import { isRunId } from '../run-id.js';
import type {
  BufferedSignal, SignalDeliverParams, SignalDeliverResult, SignalInboxConsumeParams, SignalInboxConsumeResult,
  SignalInboxListParams, SuspensionListItem, SuspensionListParams, SuspensionListResult, SuspensionOpenOldestParams,
} from '../store.js';
import { notASuspension } from '../store-errors.js';
import { decodeSuspensionCursor, encodeSuspensionCursor } from '../suspension-cursor.js';
import { assertEntriesFit, assertJsonStorable, assertStorableText } from '../write-checks.js';
import * as jq from './journal-queries.js';
import type { PgAccess } from './pg-access.js';
import * as rq from './runs-queries.js';
import * as sq from './signals-queries.js';

/*
 * PostgresStore's signal inbox and suspension listing (SignalOps in suspension-params.ts documents the contracts). Kept out
 * of postgres-store.ts so that file stays a list of methods; these run on the PgAccess it lends.
 */

function toSignal(row: sq.InboxRow): BufferedSignal {
  return { runId: row.run_id, name: row.name, signalId: row.signal_id, payload: row.payload, createdAt: new Date(row.created_at) };
}

export async function signalDeliver(db: PgAccess, params: SignalDeliverParams): Promise<SignalDeliverResult> {
  assertJsonStorable('payload', params.payload, db.limits.payloadBytes);
  assertStorableText('name', params.name);
  assertStorableText('signalId', params.signalId);
  if (params.target) assertEntriesFit([params.target.entry], db.limits, 'entry');
  const { runId, name, signalId, dedupeKey } = params;
  if (!isRunId(runId)) throw new RunNotFoundError(runId);
  return db.transaction(async (client) => {
    const locked = (await client.query<{ status: RunStatus; next_seq: number }>(rq.runLockForResolve(runId, params.namespace ?? null))).rows[0];
    if (!locked) throw new RunNotFoundError(runId);
    const facts = (await client.query<{
      duplicate: jq.JournalRow | null; duplicate_winner: jq.JournalRow | null; buffered: sq.InboxRow | null; open_seq: number | null; queued: boolean;
    }>(sq.signalDeliverFacts({ runId, dedupeKey, signalId, name }))).rows[0]!;
    if (facts.duplicate) {
      return { outcome: 'duplicate', entry: jq.toEntry(facts.duplicate), winner: facts.duplicate_winner ? jq.toEntry(facts.duplicate_winner) : null, signal: null };
    }
    if (facts.buffered) return { outcome: 'duplicate', entry: null, winner: null, signal: toSignal(facts.buffered) };
    if (isTerminalStatus(locked.status)) throw new RunStateError(runId, locked.status, 'not finished');
    if (facts.open_seq !== null && !facts.queued) {
      if (params.target?.seq !== facts.open_seq) return { outcome: 'wait_open', seq: facts.open_seq };
      if (locked.next_seq + 1 > db.limits.journalEntries) throw new JournalFullError(runId, db.limits.journalEntries);
      const [row] = (await client.query<jq.JournalRow>(jq.journalResolveInsert({
        runId, suspensionSeq: facts.open_seq, applied: true, entry: { ...params.target.entry, dedupeKey },
      }))).rows;
      const entry = jq.toEntry(row!);
      if (!params.leaseFor) return { outcome: 'resolved', entry };
      // The take, in the same transaction: the run went SUSPENDED -> PENDING just above (RUNNING stays flagged).
      const [taken] = (await client.query<{ run: rq.RunRow; entry: jq.JournalRow }>(rq.runLeaseAcquireRunning({
        runId, holder: params.leaseFor.holder, ttlMs: params.leaseFor.ttlMs, statuses: ['PENDING'], namespace: null, routing: params.leaseFor.routing,
      }))).rows;
      return { outcome: 'resolved', entry, taken: taken ? rq.takenOf(taken) : null };
    }
    const [row] = (await client.query<sq.InboxRow>(sq.inboxInsert({ runId, name, signalId, payload: params.payload }))).rows;
    return { outcome: 'buffered', signal: toSignal(row!) };
  }, { runId });
}

export async function suspensionOpenOldest(db: PgAccess, params: SuspensionOpenOldestParams): Promise<JournalEntry | null> {
  if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
  const { rows } = await db.query<{ entry: jq.JournalRow | null }>(sq.suspensionOpenOldest({
    runId: params.runId, namespace: params.namespace ?? null, kind: params.kind, name: params.name,
  }));
  const [row] = rows;
  if (!row) throw new RunNotFoundError(params.runId);
  return row.entry ? jq.toEntry(row.entry) : null;
}

export async function signalInboxList(db: PgAccess, params: SignalInboxListParams): Promise<BufferedSignal[]> {
  if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
  const { rows } = await db.query<sq.InboxRow>(sq.inboxList({
    runId: params.runId, namespace: params.namespace ?? null, name: params.name ?? null, limit: params.limit ?? null,
  }));
  if (rows.length === 0) await db.findRun(params.runId, params.namespace ?? null);
  return rows.map(toSignal);
}

export async function signalInboxConsume(db: PgAccess, params: SignalInboxConsumeParams): Promise<SignalInboxConsumeResult> {
  assertEntriesFit([params.entry], db.limits, 'entry');
  const { lease, signalId, suspensionSeq } = params;
  if (!isRunId(lease.runId)) throw new RunNotFoundError(lease.runId);
  const outcome = await db.transaction(async (client) => {
    const locked = (await client.query<{ next_seq: number }>(sq.runLockFenced({ runId: lease.runId, epoch: lease.epoch }))).rows[0];
    if (!locked) return 'fenced' as const;
    const facts = (await client.query<{ buffered: boolean; target_status: string | null; winner: jq.JournalRow | null }>(
      sq.inboxConsumeFacts({ runId: lease.runId, signalId, suspensionSeq }))).rows[0]!;
    if (!facts.buffered) return { entry: null, winner: null };
    if (facts.winner) return { entry: null, winner: jq.toEntry(facts.winner) };
    if (facts.target_status !== 'suspended') throw notASuspension(lease.runId, suspensionSeq);
    if (locked.next_seq + 1 > db.limits.journalEntries) throw new JournalFullError(lease.runId, db.limits.journalEntries);
    const [row] = (await client.query<jq.JournalRow>(sq.inboxConsume({
      runId: lease.runId, signalId, suspensionSeq, applied: params.valid, entry: params.entry,
    }))).rows;
    const entry = jq.toEntry(row!);
    return { entry, winner: params.valid ? entry : null };
  }, { runId: lease.runId });
  if (outcome !== 'fenced') return outcome;
  throw (await db.fenceFailure(lease)) ?? new RunStateError(lease.runId, 'not held under this lease', 'held by this worker');
}

export async function suspensionList(db: PgAccess, params: SuspensionListParams): Promise<SuspensionListResult> {
  assertPageSize(params.pageSize);
  const after = params.cursor ? decodeSuspensionCursor(params.cursor) : null;
  if (params.runId !== undefined && !isRunId(params.runId)) return { items: [], nextCursor: null };
  const { rows } = await db.query<sq.SuspensionRow>(sq.suspensionList({
    namespace: params.namespace, kinds: params.kinds?.length ? params.kinds : null, runId: params.runId ?? null,
    workflowName: params.workflowName ?? null,
    labels: params.labels && Object.keys(params.labels).length ? JSON.stringify(params.labels) : null,
    open: params.open ?? null,
    after: after ? { createdAtMicros: after.createdAtMicros.toString(), runId: after.runId, seq: after.seq } : null,
    limit: params.pageSize + 1,
  }));
  const items = rows.slice(0, params.pageSize).map((row): SuspensionListItem => ({
    entry: jq.toEntry(row.entry),
    winner: row.winner ? jq.toEntry(row.winner) : null,
    superseded: row.superseded,
    run: { id: row.run_id, namespace: row.namespace, workflowName: row.workflow_name, status: row.run_status, labels: row.labels },
  }));
  const last = rows[params.pageSize - 1];
  const nextCursor = rows.length > params.pageSize && last
    ? encodeSuspensionCursor({ createdAtMicros: BigInt(last.created_us), runId: last.run_id, seq: last.entry.seq })
    : null;
  return { items, nextCursor };
}
