import type pg from 'pg';
import { JournalFullError, LeaseLostError, RunNotFoundError, SweeperLeaseLostError } from '../../journal/errors.js';
import type { Limits } from '../../journal/limits.js';
import type { Lease, Run } from '../../journal/run.js';
import { isRunId } from '../run-id.js';
import type { SweeperLease } from '../sweeper-params.js';
import * as jq from './journal-queries.js';
import { translatePgError, type ErrorContext } from './pg-errors.js';
import * as rq from './runs-queries.js';
import * as slq from './sweeper-leader-queries.js';

/*
 * What every `*-ops.ts` file of PostgresStore runs on: its pools, its limits, and the few helpers
 * each area needs (a translated query, a transaction, the run lookup behind RunNotFoundError, the
 * reason a fenced statement matched nothing, the sweeper's fence). One object the store lends to
 * all of them, so an area's operations are plain functions of (db, params).
 */

export class PgAccess {
  constructor(
    /** The main pool: appends, reads, claims, sweeps. */
    readonly pool: pg.Pool,
    /** Renewals and releases, so a busy main pool cannot starve a renewal into a spurious takeover. */
    readonly leasePool: pg.Pool,
    readonly limits: Limits,
    /** lock_timeout for sweeper recoveries: skip a contended run rather than queue behind it. */
    readonly sweeperLockTimeoutMs: number,
  ) {}

  /** One statement; a pg error becomes a domain error (pg-errors.ts). */
  async query<R extends pg.QueryResultRow>(
    query: pg.QueryConfig, context: ErrorContext = {}, pool: pg.Pool = this.pool,
  ): Promise<pg.QueryResult<R>> {
    try {
      return await pool.query<R>(query);
    } catch (err) {
      throw translatePgError(err, context);
    }
  }

  /** `fn` between BEGIN and COMMIT on one pooled connection; any error rolls back and is translated. */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>, context: ErrorContext = {}): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw translatePgError(err, context);
    }
    let broken: Error | undefined;
    // pg-pool stops listening for errors on a checked-out client; a backend killed between our
    // statements would otherwise be an uncaught 'error' event. Note it and discard the client.
    const onError = (err: Error) => {
      broken = err;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch((e: unknown) => {
        broken = e instanceof Error ? e : new Error(String(e)); // the connection is unusable: discard it
      });
      throw translatePgError(err, context);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  /** First statement of a fenced sweeper transaction (sweeper-leader-queries.ts says why it holds). */
  async sweeperFence(client: pg.PoolClient, lease: SweeperLease): Promise<void> {
    const { rows } = await client.query(slq.sweeperFence(lease));
    if (rows.length === 0) throw new SweeperLeaseLostError(lease.holder, lease.epoch);
  }

  /** The run, or RunNotFoundError for an unknown id or one outside `namespace` (when not null). */
  async findRun(runId: string, namespace: string | null): Promise<Run> {
    if (!isRunId(runId)) throw new RunNotFoundError(runId);
    const row = (await this.query<rq.RunRow>(rq.runGet(runId, namespace))).rows[0];
    if (!row) throw new RunNotFoundError(runId);
    return rq.toRun(row);
  }

  /**
   * Why a fenced statement matched nothing: no run, a lost lease, or (for an append of `adding`
   * entries) a full journal. Null when none applies (an empty append on a live lease).
   */
  async fenceFailure(lease: Lease, adding = 0, pool: pg.Pool = this.pool, addingBytes = 0): Promise<Error | null> {
    const state = (await this.query<{ lease_epoch: string; held: boolean; next_seq: number; journal_bytes: string }>(jq.journalFenceState(lease.runId), {}, pool)).rows[0];
    if (!state) return new RunNotFoundError(lease.runId);
    if (Number(state.lease_epoch) !== lease.epoch || !state.held) return new LeaseLostError(lease.runId, lease.epoch);
    if (adding > 0 && state.next_seq + adding > this.limits.journalEntries) {
      return new JournalFullError(lease.runId, this.limits.journalEntries);
    }
    if (adding > 0 && Number(state.journal_bytes) + addingBytes > this.limits.journalBytes) {
      return new JournalFullError(lease.runId, this.limits.journalEntries, this.limits.journalBytes);
    }
    return null;
  }
}
