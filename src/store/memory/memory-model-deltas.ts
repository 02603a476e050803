import { RunNotFoundError } from '../../journal/errors.js';
import type { ModelDelta, ModelDeltaAppendParams, ModelDeltaListParams } from '../store.js';
import type { MemoryRunTable } from './memory-run-table.js';

/* The memory store's model call deltas (docs/agents.md "Token streams"), as `model_deltas` of migration 0019 holds them. */
export class MemoryModelDeltas {
  private readonly byRun = new Map<string, ModelDelta[]>();
  /** The next offset per run; kept when rows are swept, as model_delta_counters is. */
  private readonly next = new Map<string, number>();

  constructor(private readonly table: MemoryRunTable) {}

  modelDeltaAppend(params: ModelDeltaAppendParams): void {
    if (params.deltas.length === 0) return;
    if (!this.table.runs.has(params.runId)) throw new RunNotFoundError(params.runId);
    const rows = this.byRun.get(params.runId) ?? [];
    let offset = this.next.get(params.runId) ?? 0;
    const createdAt = this.table.now();
    for (const d of params.deltas) {
      rows.push({ ...d, runId: params.runId, offset: offset++, entrySeq: params.entrySeq, attempt: params.attempt, createdAt });
    }
    this.next.set(params.runId, offset);
    this.byRun.set(params.runId, rows);
    this.table.wakeups.notifyDelta(params.runId);
  }

  modelDeltaList(params: ModelDeltaListParams): ModelDelta[] {
    const rows = this.byRun.get(params.runId) ?? [];
    return rows.filter((d) => d.offset > params.afterOffset).slice(0, params.limit).map((d) => ({ ...d }));
  }

  modelDeltaSweep(params: { before: Date; limit: number }): number {
    let left = params.limit;
    for (const [runId, rows] of this.byRun) {
      const kept = rows.filter((d) => left <= 0 || d.createdAt >= params.before || (left--, false));
      this.byRun.set(runId, kept);
    }
    return params.limit - left;
  }
}
