import pg from 'pg';
import type { Limits } from '../../journal/limits.js';
import type { StoreLogger } from '../store-kind.js';
import { BUDGET_LOCK_POOL_SIZE, BUDGET_LOCK_WAIT_MS } from './budget-lock.js';

export interface PostgresStoreOptions {
  url: string;
  limits?: Partial<Limits>;
  /** Connections in the main pool (appends, reads, claims, sweeps). Default 10. */
  poolSize?: number;
  applicationName?: string;
  logger?: StoreLogger;
  /** Waiting for a pooled connection longer than this is StoreUnavailableError. Default 5000. */
  connectionTimeoutMs?: number;
  /** Per-session statement_timeout. Default 10000. */
  statementTimeoutMs?: number;
  /** Per-session idle_in_transaction_session_timeout: a stalled transaction frees its row locks. Default 5000. */
  idleInTransactionTimeoutMs?: number;
  /** lock_timeout for sweeper statements: skip a contended run rather than queue behind it. Default 500. */
  sweeperLockTimeoutMs?: number;
  /** Reconnect backoff of the LISTEN connection (doubling, jittered). Default 50 to 5000 ms. */
  listenerBackoffMs?: { min: number; max: number };
  /**
   * Journal appends running at once; appends arriving meanwhile wait and then go together, one
   * statement for many runs (group commit, append-batcher.ts). Default 2; 0 sends each on its own.
   * On 2 cores at 16 concurrent runs, 1 and 2 gave the most steps/s (4,750 and 4,500), 4 gave
   * 3,950 and 8 gave 2,870: fewer statements, larger batches, less PostgreSQL CPU per step.
   */
  appendsInFlight?: number;
}

/** PostgresStore's pools and the config of its dedicated sessions (listener, lease sessions). */
export interface PostgresPools {
  /** Appends, reads, claims, sweeps. */
  pool: pg.Pool;
  /** Renewals and releases, so a busy main pool cannot starve a renewal into a spurious takeover. */
  leasePool: pg.Pool;
  /** Budget admission locks (budget-lock.ts). */
  lockPool: pg.Pool;
  sessionConfig: (role: string) => pg.ClientConfig;
}

/** Creates the pools (no connection is made until the first query). */
export function openPools(options: PostgresStoreOptions): PostgresPools {
  const app = options.applicationName ?? 'waymark';
  const session = (name: string): pg.PoolConfig => ({
    connectionString: options.url,
    application_name: name,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
    keepAlive: true,
    // Set per session at connect time, so no pooled connection runs without them.
    options: `-c statement_timeout=${options.statementTimeoutMs ?? 10_000} ` +
      `-c idle_in_transaction_session_timeout=${options.idleInTransactionTimeoutMs ?? 5_000}`,
  });
  const pool = new pg.Pool({ ...session(app), max: options.poolSize ?? 10 });
  const leasePool = new pg.Pool({ ...session(`${app}:lease`), max: 2 });
  // Sessions of the budget lock pool wait for an advisory lock at most BUDGET_LOCK_WAIT_MS.
  const lockPool = new pg.Pool({
    ...session(`${app}:budget`), max: BUDGET_LOCK_POOL_SIZE,
    options: `-c statement_timeout=${BUDGET_LOCK_WAIT_MS} -c idle_in_transaction_session_timeout=${options.idleInTransactionTimeoutMs ?? 5_000}`,
  });
  for (const p of [pool, leasePool, lockPool]) {
    // An idle client's backend can die at any time (pg_terminate_backend, restart); without a
    // listener that 'error' event would crash the process.
    p.on('error', (err) => options.logger?.warn({ err }, 'idle database connection failed; the pool replaces it'));
  }
  return { pool, leasePool, lockPool, sessionConfig: (role) => session(`${app}:${role}`) };
}
