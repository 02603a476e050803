import type pg from 'pg';
import type { Json } from '../../journal/run.js';
import type { ReplicaInfo, ServedWorkflow } from '../store.js';
import { RUN_IS_FLOW } from './flows-queries.js';

/*
 * Named statements on `replicas` (migration 0007): routing runs to the replicas that serve their
 * workflow (docs/recovery.md "Routing"). Expiry is the database clock's, as for leases.
 */

const MS = `* interval '1 millisecond'`;

export function replicaHeartbeat(p: { replicaId: string; workflows: ServedWorkflow[]; ttlMs: number }): pg.QueryConfig {
  return {
    name: 'replicas_heartbeat',
    text: `INSERT INTO replicas (id, workflows, started_at, heartbeat_at, expires_at)
      VALUES ($1, $2::jsonb, clock_timestamp(), clock_timestamp(), clock_timestamp() + $3::integer ${MS})
      ON CONFLICT (id) DO UPDATE SET workflows = EXCLUDED.workflows, heartbeat_at = EXCLUDED.heartbeat_at,
        expires_at = EXCLUDED.expires_at`,
    values: [p.replicaId, JSON.stringify(p.workflows), p.ttlMs],
  };
}

export function replicaRemove(replicaId: string): pg.QueryConfig {
  return { name: 'replicas_remove', text: 'DELETE FROM replicas WHERE id = $1', values: [replicaId] };
}

export function replicaListLive(): pg.QueryConfig {
  return {
    name: 'replicas_list_live',
    text: `SELECT id, workflows, started_at, heartbeat_at, expires_at FROM replicas
      WHERE expires_at > clock_timestamp() ORDER BY started_at DESC, id`,
  };
}

export interface ReplicaRow { id: string; workflows: Json; started_at: Date; heartbeat_at: Date; expires_at: Date }

export function toReplica(row: ReplicaRow): ReplicaInfo {
  return {
    replicaId: row.id, workflows: row.workflows as unknown as ServedWorkflow[],
    startedAt: row.started_at, heartbeatAt: row.heartbeat_at, expiresAt: row.expires_at,
  };
}

/**
 * Whether some live replica serves run `r`'s exact digest (a SQL condition over a `runs r` row):
 * then only such replicas claim it (runs-queries.ts runClaim).
 */
export const LIVE_REPLICA_SERVES_DIGEST = `EXISTS (SELECT 1 FROM replicas rp WHERE rp.expires_at > clock_timestamp()
  AND rp.workflows @> jsonb_build_array(jsonb_build_object('name', r.workflow_name, 'digest', r.workflow_digest)))`;
/** Whether some live replica serves run `r`'s workflow under any digest. */
const LIVE_REPLICA_SERVES_NAME = `EXISTS (SELECT 1 FROM replicas rp WHERE rp.expires_at > clock_timestamp()
  AND rp.workflows @> jsonb_build_array(jsonb_build_object('name', r.workflow_name)))`;

/** PENDING runs for longer than `olderThanMs` whose workflow no live replica serves (and is no flow: every replica serves those), oldest first. */
export function runListUnroutable(p: { olderThanMs: number; limit: number }): pg.QueryConfig {
  return {
    name: 'runs_list_unroutable',
    text: `SELECT r.id, r.namespace, r.workflow_name, r.workflow_digest, r.updated_at FROM runs r
      WHERE r.status = 'PENDING' AND r.updated_at <= now() - $1::integer ${MS}
        AND NOT ${LIVE_REPLICA_SERVES_NAME} AND NOT ${RUN_IS_FLOW}
      ORDER BY r.updated_at, r.id LIMIT $2`,
    values: [p.olderThanMs, p.limit],
  };
}
