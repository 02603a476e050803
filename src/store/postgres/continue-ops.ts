import { LeaseLostError, RunNotFoundError } from '../../journal/errors.js';
import { CONTINUE_LABELS, continueKey } from '../../journal/fork-labels.js';
import { isRunId, newRunId } from '../run-id.js';
import type { RunContinueAsNewParams, RunContinueAsNewResult } from '../run-params.js';
import { assertRunCreateFits } from '../write-checks.js';
import * as jq from './journal-queries.js';
import type { PgAccess } from './pg-access.js';
import * as rq from './runs-queries.js';

/*
 * PostgresStore's runContinueAsNew (run-params.ts documents it): one transaction that locks the
 * run under its lease, creates the successor (or finds the one its key already names), labels the
 * run with it and ends it SUCCEEDED with its status entry. A fence that refuses rolls all of it back.
 */

export async function runContinueAsNew(db: PgAccess, params: RunContinueAsNewParams): Promise<RunContinueAsNewResult> {
  const { lease } = params;
  if (!isRunId(lease.runId)) throw new RunNotFoundError(lease.runId);
  let fenced = false;
  const result = await db.transaction(async (client) => {
    const held = (await client.query<{ namespace: string }>(continueFence(lease.runId, lease.epoch))).rows[0];
    if (!held) {
      fenced = true;
      return null;
    }
    const successor = {
      ...params.successor, namespace: held.namespace, idempotencyKey: continueKey(lease.runId),
      labels: { ...params.successor.labels, [CONTINUE_LABELS.from]: lease.runId },
    };
    assertRunCreateFits(successor, db.limits);
    const row = (await client.query<rq.RunRow>(rq.runInsert({ ...successor, id: newRunId() }))).rows[0]
      ?? (await client.query<rq.RunRow>(rq.runByIdempotencyKey(held.namespace, successor.idempotencyKey))).rows[0]!;
    await client.query(continueLabel(lease.runId, row.id));
    const ended = (await client.query<{ run: rq.RunRow; entry: jq.JournalRow }>(rq.runStatusSet({
      lease, status: 'SUCCEEDED', output: JSON.stringify({ continuedAsNew: row.id }), error: null,
    }))).rows[0]!;
    return { run: rq.toRun(ended.run), entry: jq.toEntry(ended.entry), successor: rq.toRun(row) };
  }, { runId: lease.runId });
  if (result) return result;
  throw (fenced ? await db.fenceFailure(lease) : null) ?? new LeaseLostError(lease.runId, lease.epoch);
}

/** Locks the run if `epoch` still holds it (the fence of the whole hand-over). */
function continueFence(runId: string, epoch: number) {
  return {
    name: 'runs_continue_fence',
    text: 'SELECT namespace FROM runs WHERE id = $1 AND lease_epoch = $2 AND lease_holder IS NOT NULL FOR UPDATE',
    values: [runId, epoch],
  };
}

function continueLabel(runId: string, successorId: string) {
  return {
    name: 'runs_continue_label',
    text: 'UPDATE runs SET labels = labels || jsonb_build_object($2::text, $3::text) WHERE id = $1',
    values: [runId, CONTINUE_LABELS.as, successorId],
  };
}
