import type { ReplicaHeartbeatParams, ReplicaInfo, RunListUnroutableParams, UnroutableRun } from '../store.js';
import type { MemoryFlows } from './memory-flows.js';
import { compare, type MemoryRunTable } from './memory-run-table.js';

/* The memory store's replica registry, for routing (ReplicaOps in replica-params.ts documents each method). */
export class MemoryReplicas {
  private readonly replicas = new Map<string, ReplicaInfo>();

  constructor(private readonly t: MemoryRunTable, private readonly flows: MemoryFlows) {}

  async replicaHeartbeat(params: ReplicaHeartbeatParams): Promise<void> {
    const now = this.t.now();
    const startedAt = this.replicas.get(params.replicaId)?.startedAt ?? now;
    this.replicas.set(params.replicaId, {
      replicaId: params.replicaId, workflows: structuredClone(params.workflows), startedAt, heartbeatAt: now,
      expiresAt: new Date(now.getTime() + params.ttlMs),
    });
  }
  async replicaRemove(params: { replicaId: string }): Promise<void> {
    this.replicas.delete(params.replicaId);
  }
  async replicaList(): Promise<ReplicaInfo[]> {
    return this.live(this.t.now()).map((r) => structuredClone(r));
  }
  async runListUnroutable(params: RunListUnroutableParams): Promise<UnroutableRun[]> {
    const now = this.t.now();
    const live = this.live(now);
    return [...this.t.runs.values()].map((r) => r.run)
      .filter((r) => r.status === 'PENDING' && r.updatedAt.getTime() <= now.getTime() - params.olderThanMs &&
        !live.some((rep) => rep.workflows.some((w) => w.name === r.workflowName)) && !this.flows.isFlow(r.namespace, r.workflowName))
      .sort((a, b) => a.updatedAt.getTime() - b.updatedAt.getTime() || compare(a.id, b.id))
      .slice(0, params.limit)
      .map((r) => ({ runId: r.id, namespace: r.namespace, workflowName: r.workflowName, workflowDigest: r.workflowDigest, pendingSince: r.updatedAt }));
  }
  /** Replicas whose heartbeat has not expired at `now`, newest start first. */
  live(now: Date): ReplicaInfo[] {
    return [...this.replicas.values()].filter((r) => r.expiresAt.getTime() > now.getTime())
      .sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime() || compare(a.replicaId, b.replicaId));
  }}
