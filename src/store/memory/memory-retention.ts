import { isTerminalStatus } from '../../journal/run.js';
import type { RunCostDaily, RunCostDailyListParams, RunPurgeParams, RunPurgeResult } from '../retention-params.js';
import type { MemoryRemoteTasks } from './memory-remote-tasks.js';
import { compare, type MemoryRunTable, type RunRecord } from './memory-run-table.js';

/*
 * The memory store's retention (RetentionOps in retention-params.ts documents each method): the
 * same trees, order and roll-up as PostgreSQL's retention-ops.ts, held to it by
 * test/conformance/retention.conformance.ts.
 */
export class MemoryRetention {
  /** `${namespace}\0${workflow}\0${day}` -> the day's roll-up. */
  private readonly daily = new Map<string, RunCostDaily>();

  constructor(private readonly t: MemoryRunTable, private readonly remote: MemoryRemoteTasks) {}

  async runPurge(params: RunPurgeParams): Promise<RunPurgeResult> {
    this.t.sweeperFence(params.leader);
    const horizon = this.t.now().getTime() - Math.max(0, params.olderThanMs);
    const except = new Set(params.exceptNamespaces ?? []);
    const children = new Map<string, RunRecord[]>();
    for (const rec of this.t.runs.values()) {
      const parent = rec.run.parentRunId;
      if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), rec]);
    }
    const tree = (rec: RunRecord): RunRecord[] => [rec, ...(children.get(rec.run.id) ?? []).flatMap(tree)];
    const purgeable = (rec: RunRecord) => isTerminalStatus(rec.run.status) && !this.t.webhooks.pendingFor(rec.run.id);
    const roots = [...this.t.runs.values()]
      .filter(({ run }) => run.parentRunId === null && isTerminalStatus(run.status) && run.updatedAt.getTime() <= horizon &&
        (params.namespace === undefined || run.namespace === params.namespace) && !except.has(run.namespace) &&
        (params.statuses === undefined || params.statuses.includes(run.status)) &&
        (params.workflowName === undefined || run.workflowName === params.workflowName))
      .filter((rec) => (children.get(rec.run.id) ?? []).every((c) => isTerminalStatus(c.run.status)) && !this.t.webhooks.pendingFor(rec.run.id))
      .sort((a, b) => a.run.updatedAt.getTime() - b.run.updatedAt.getTime() || compare(a.run.id, b.run.id))
      .slice(0, Math.max(0, params.limit));
    const trees = roots.map(tree).filter((members) => members.every(purgeable));
    const result: RunPurgeResult = {
      roots: trees.map((m) => m[0]!.run.id), runIds: trees.flatMap((m) => m.map((r) => r.run.id).reverse()), entries: 0,
      oldestEnd: trees[0]?.[0]!.run.updatedAt ?? null, newestEnd: trees.at(-1)?.[0]!.run.updatedAt ?? null,
    };
    for (const rec of trees.flat()) {
      result.entries += rec.entries.length;
      if (params.dryRun) continue;
      this.rollUp(rec);
      this.t.runs.delete(rec.run.id);
      if (rec.run.idempotencyKey !== null) this.t.idempotency.delete(`${rec.run.namespace}\u0000${rec.run.idempotencyKey}`);
      this.t.webhooks.forgetRun(rec.run.id);
      this.remote.forgetRun(rec.run.id);
    }
    return result;
  }

  async runCostDailyList(params: RunCostDailyListParams): Promise<RunCostDaily[]> {
    return [...this.daily.values()]
      .filter((d) => (params.namespace === undefined || d.namespace === params.namespace) &&
        (params.workflowName === undefined || d.workflowName === params.workflowName) &&
        (params.fromDay === undefined || d.day >= params.fromDay) && (params.toDay === undefined || d.day <= params.toDay))
      .sort((a, b) => compare(a.day, b.day) || compare(a.namespace, b.namespace) || compare(a.workflowName, b.workflowName))
      .map((d) => ({ ...d }));
  }

  /** Adds a run about to go to the roll-up: itself on the day it ended, its priced entries on the day each was written. */
  private rollUp(rec: RunRecord): void {
    this.row(rec, rec.run.updatedAt).runs += 1;
    for (const e of rec.entries) {
      if (e.costUsd === null && e.kind !== 'model') continue;
      const row = this.row(rec, e.createdAt);
      if (e.kind === 'model' && e.usage !== null) row.modelCalls += 1;
      row.costUsd += e.costUsd ?? 0;
      row.inputTokens += e.usage?.inputTokens ?? 0;
      row.outputTokens += e.usage?.outputTokens ?? 0;
    }
  }

  private row(rec: RunRecord, at: Date): RunCostDaily {
    const day = at.toISOString().slice(0, 10);
    const key = `${rec.run.namespace}\u0000${rec.run.workflowName}\u0000${day}`;
    let row = this.daily.get(key);
    if (!row) {
      row = { namespace: rec.run.namespace, workflowName: rec.run.workflowName, day, runs: 0, modelCalls: 0, costUsd: 0, inputTokens: 0, outputTokens: 0 };
      this.daily.set(key, row);
    }
    return row;
  }
}
