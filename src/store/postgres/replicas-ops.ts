import type { ReplicaHeartbeatParams, ReplicaInfo, RunListUnroutableParams, UnroutableRun } from '../replica-params.js';
import type { PgAccess } from './pg-access.js';
import * as repq from './replicas-queries.js';

/* PostgresStore's replica registry for routing (ReplicaOps in replica-params.ts documents each). */

export async function replicaHeartbeat(db: PgAccess, params: ReplicaHeartbeatParams): Promise<void> {
  await db.query(repq.replicaHeartbeat(params));
}

export async function replicaRemove(db: PgAccess, params: { replicaId: string }): Promise<void> {
  await db.query(repq.replicaRemove(params.replicaId));
}

export async function replicaList(db: PgAccess): Promise<ReplicaInfo[]> {
  return (await db.query<repq.ReplicaRow>(repq.replicaListLive())).rows.map(repq.toReplica);
}

export async function runListUnroutable(db: PgAccess, params: RunListUnroutableParams): Promise<UnroutableRun[]> {
  const { rows } = await db.query<{ id: string; namespace: string; workflow_name: string; workflow_digest: string; updated_at: Date }>(
    repq.runListUnroutable(params),
  );
  return rows.map((r) => ({ runId: r.id, namespace: r.namespace, workflowName: r.workflow_name, workflowDigest: r.workflow_digest, pendingSince: r.updated_at }));
}
