import type { Json } from '../journal/run.js';

/* Replicas as a store records them, for routing (docs/recovery.md "Routing"). */

/** A workflow definition a replica serves, as the replica's heartbeat records it. */
export interface ServedWorkflow {
  name: string;
  version: string;
  digest: string;
  drift: 'warn' | 'strict';
  description: string;
  /** JSON Schema of the input; null when the workflow declares none. */
  inputSchema: Json | null;
  /** The definition's run timeout in milliseconds; null or absent (a replica from before timeouts): none. */
  timeoutMs?: number | null;
}

export interface ReplicaHeartbeatParams {
  replicaId: string;
  workflows: ServedWorkflow[];
  ttlMs: number;
}

export interface ReplicaInfo {
  replicaId: string;
  workflows: ServedWorkflow[];
  startedAt: Date;
  heartbeatAt: Date;
  expiresAt: Date;
}

export interface RunListUnroutableParams {
  olderThanMs: number;
  limit: number;
}

export interface UnroutableRun {
  runId: string;
  namespace: string;
  workflowName: string;
  workflowDigest: string;
  /** When it became PENDING (its last status change). */
  pendingSince: Date;
}

/**
 * Routing (docs/recovery.md "Routing"): which replicas are alive and which workflows they serve.
 * Part of JournalStore (store.ts), whose contract holds for each method.
 */
export interface ReplicaOps {
  /**
   * Records that replica `replicaId` is alive and serves `workflows` until `ttlMs` from now
   * (database clock); a later heartbeat replaces the list. Routing (docs/recovery.md "Routing").
   */
  replicaHeartbeat(params: ReplicaHeartbeatParams): Promise<void>;
  /** A clean stop: the replica serves nothing from now on. */
  replicaRemove(params: { replicaId: string }): Promise<void>;
  /** Replicas whose heartbeat has not expired, newest start first. */
  replicaList(): Promise<ReplicaInfo[]>;
  /**
   * PENDING runs, for longer than `olderThanMs`, that no live replica can execute (none serves their
   * workflow under any digest), oldest first: the sweeper reports them.
   */
  runListUnroutable(params: RunListUnroutableParams): Promise<UnroutableRun[]>;
}
