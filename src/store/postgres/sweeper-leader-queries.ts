import type pg from 'pg';
import { DEAD_LEASE_SESSIONS } from './lease-sessions.js';

/*
 * Named statements on `sweeper_leader` (migration 0003): the leader lease among a store's
 * sweepers. Expiry is on the database clock; `epoch` is the fencing token. sweeperFence is taken
 * FOR SHARE inside each fenced sweeper transaction: an acquire (an UPDATE of the row) waits for
 * those transactions to commit, and a fence check that waited on an acquire re-reads the new row
 * version and finds the epoch moved. So no sweeper write commits after a takeover it did not win.
 */

const ROW = `'sweeper'`;
const MS = `* interval '1 millisecond'`;
const COLUMNS = 'holder, epoch, expires_at';

export interface SweeperLeaseRow { holder: string; epoch: string | number; expires_at: Date }

/**
 * Takes the lease when it is free, expired, or held by a sweeper whose lease session has ended
 * (its process died: lease-sessions.ts), so a restarted sweeper leads at once instead of after
 * the dead one's TTL, as a dead holder's runs are reclaimed at once. The epoch moves either way.
 */
export function sweeperLeaseAcquire(p: { holder: string; ttlMs: number }): pg.QueryConfig {
  return {
    name: 'sweeper_leader_acquire',
    text: `UPDATE sweeper_leader SET epoch = epoch + 1, holder = $1, expires_at = clock_timestamp() + $2::integer ${MS}
      WHERE name = ${ROW} AND (holder IS NULL OR expires_at < clock_timestamp()
        OR holder IN (SELECT dead.holder FROM (${DEAD_LEASE_SESSIONS}) dead))
      RETURNING ${COLUMNS}`,
    values: [p.holder, p.ttlMs],
  };
}

/** Renews by epoch and holder: an expired lease nobody took over is still ours. */
export function sweeperLeaseRenew(p: { holder: string; epoch: number; ttlMs: number }): pg.QueryConfig {
  return {
    name: 'sweeper_leader_renew',
    text: `UPDATE sweeper_leader SET expires_at = clock_timestamp() + $3::integer ${MS}
      WHERE name = ${ROW} AND epoch = $1 AND holder = $2
      RETURNING ${COLUMNS}`,
    values: [p.epoch, p.holder, p.ttlMs],
  };
}

export function sweeperLeaseRelease(p: { holder: string; epoch: number }): pg.QueryConfig {
  return {
    name: 'sweeper_leader_release',
    text: `UPDATE sweeper_leader SET holder = NULL, expires_at = NULL WHERE name = ${ROW} AND epoch = $1 AND holder = $2`,
    values: [p.epoch, p.holder],
  };
}

/** The fence, first statement of a fenced sweeper transaction: a row means "still the leader". */
export function sweeperFence(p: { holder: string; epoch: number }): pg.QueryConfig {
  return {
    name: 'sweeper_leader_fence',
    text: `SELECT 1 AS held FROM sweeper_leader WHERE name = ${ROW} AND epoch = $1 AND holder = $2 FOR SHARE`,
    values: [p.epoch, p.holder],
  };
}
