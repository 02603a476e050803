import type pg from 'pg';
import { KeyedMutex } from '../keyed-mutex.js';
import type { BudgetLock, BudgetLockParams } from '../store.js';
import { translatePgError } from './pg-errors.js';

/*
 * Budget admission locks on PostgreSQL (docs/agents.md "Budget admission"): a session advisory
 * lock per run tree, keyed by the tree's root run id, held on a connection of its own small pool
 * while the holder checks the tree's spend and commits its reservation (the model call's intent)
 * through the main pool. Callers in one process first queue on an in-process mutex, so a busy tree
 * holds one database connection per process, never the main pool's. A holder that dies loses the
 * lock with its session; a wait longer than BUDGET_LOCK_WAIT_MS fails (the execution stops, the run is kept).
 */

/** How long a caller waits for a tree's lock before failing; the lock pool's statement_timeout. */
export const BUDGET_LOCK_WAIT_MS = 30_000;
/** Connections of the lock pool: one per run tree being admitted at once in this process. */
export const BUDGET_LOCK_POOL_SIZE = 4;

export class BudgetLocks {
  private readonly local = new KeyedMutex();

  constructor(private readonly pool: pg.Pool) {}

  async acquire(params: BudgetLockParams): Promise<BudgetLock> {
    const key = JSON.stringify([params.namespace, params.rootRunId]);
    const releaseLocal = await this.local.acquire(key);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      releaseLocal();
      throw translatePgError(err);
    }
    let broken: Error | undefined;
    const onError = (err: Error) => { broken = err; };
    client.on('error', onError);
    try {
      await client.query({
        name: 'budget_lock',
        // The pool's sessions carry statement_timeout = the longest wait (budgetLockPool).
        text: `SELECT pg_advisory_lock(hashtextextended('waymark:budget:' || $1, 0))`,
        values: [key],
      });
    } catch (err) {
      client.off('error', onError);
      client.release(true);
      releaseLocal();
      throw translatePgError(err);
    }
    let released: Promise<void> | null = null;
    return {
      release: () => {
        released ??= (async () => {
          try {
            if (!broken) {
              await client.query({
                name: 'budget_unlock',
                text: `SELECT pg_advisory_unlock(hashtextextended('waymark:budget:' || $1, 0))`,
                values: [key],
              }).catch((err: unknown) => { broken = err instanceof Error ? err : new Error(String(err)); });
            }
          } finally {
            client.off('error', onError);
            // A connection whose unlock failed is discarded: closing its session drops the lock.
            client.release(broken ?? undefined);
            releaseLocal();
          }
        })();
        return released;
      },
    };
  }
}
