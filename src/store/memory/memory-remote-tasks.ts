import { RunNotFoundError } from '../../journal/errors.js';
import { newEntry, type JournalEntry } from '../../journal/journal-entry.js';
import { isTerminalStatus, type Run } from '../../journal/run.js';
import type {
  JournalResolveParams, JournalResolveResult, RemoteTask, RemoteTaskClaimParams, RemoteTaskCompleteParams,
  RemoteTaskCompleteResult, RemoteTaskCreateParams, RemoteTaskFence, RemoteTaskListParams, RemoteTaskNextAtParams, RemoteTaskRetryParams,
  RemoteToolDeclaration, RemoteToolInfo, RemoteToolListParams, WorkerHeartbeatParams,
} from '../store.js';

/*
 * The memory store's remote tools, workers and tasks (store.ts documents each method). Every
 * method does its work before its first await, with the run facts lent by the store, so each is
 * atomic as the Postgres statements under the run-row lock are.
 */

/** What the store lends: the clock, a run's facts, and journalResolve's synchronous part. */
export interface RemoteTaskHost {
  now(): Date;
  /** The run and its journal, or undefined for an unknown run. */
  runFacts(runId: string): { run: Run; entries: readonly JournalEntry[]; winners: ReadonlyMap<number, number> } | undefined;
  /** journalResolve; must do all its work before its first await. */
  resolve(params: JournalResolveParams): Promise<JournalResolveResult>;
  /** A task of `namespace` became claimable (created, or pending again). */
  taskWoken(namespace: string): void;
}

interface WorkerRecord {
  tools: string[];
  expiresAt: number;
}

const key = (namespace: string, name: string): string => `${namespace}\u0000${name}`;

export class MemoryRemoteTasks {
  private readonly tools = new Map<string, { namespace: string; declaration: RemoteToolDeclaration; declaredAt: Date }>();
  private readonly workers = new Map<string, WorkerRecord>();
  private readonly tasks = new Map<string, RemoteTask>();

  constructor(private readonly host: RemoteTaskHost) {}

  /** Retention: drops the run's tasks with it. */
  forgetRun(runId: string): void {
    for (const [id, task] of this.tasks) if (task.runId === runId) this.tasks.delete(id);
  }

  async workerHeartbeat(params: WorkerHeartbeatParams): Promise<boolean> {
    const now = this.host.now();
    const k = key(params.namespace, params.workerId);
    const existing = this.workers.get(k);
    if (!params.tools && !existing) return false;
    if (params.tools) {
      for (const declaration of params.tools) {
        this.tools.set(key(params.namespace, declaration.name), { namespace: params.namespace, declaration: structuredClone(declaration), declaredAt: now });
      }
    }
    this.workers.set(k, {
      tools: params.tools ? params.tools.map((t) => t.name) : existing!.tools,
      expiresAt: now.getTime() + params.ttlMs,
    });
    return true;
  }

  async workerRemove(params: { namespace: string; workerId: string }): Promise<void> {
    this.workers.delete(key(params.namespace, params.workerId));
  }

  async remoteToolList(params: RemoteToolListParams): Promise<RemoteToolInfo[]> {
    const now = this.host.now().getTime();
    const live = [...this.workers.entries()].filter(([, w]) => w.expiresAt > now);
    return [...this.tools.values()]
      .filter((t) => t.namespace === params.namespace && (params.name === undefined || t.declaration.name === params.name))
      .sort((a, b) => (a.declaration.name < b.declaration.name ? -1 : a.declaration.name > b.declaration.name ? 1 : 0))
      .map((t) => ({
        namespace: t.namespace,
        declaration: structuredClone(t.declaration),
        declaredAt: new Date(t.declaredAt.getTime()),
        workers: live
          .filter(([k, w]) => k.startsWith(`${t.namespace}\u0000`) && w.tools.includes(t.declaration.name))
          .map(([k]) => k.slice(t.namespace.length + 1))
          .sort(),
      }));
  }

  async remoteTaskCreate(params: RemoteTaskCreateParams): Promise<RemoteTask> {
    const id = `${params.runId}:${params.seq}`;
    const existing = this.tasks.get(id);
    if (existing) return structuredClone(existing);
    if (!this.host.runFacts(params.runId)) throw new RunNotFoundError(params.runId);
    const now = this.host.now();
    const task: RemoteTask = {
      id, namespace: params.namespace, runId: params.runId, seq: params.seq, tool: params.tool, queue: params.queue,
      input: structuredClone(params.input), idempotencyKey: params.idempotencyKey, attempt: 0, maxAttempts: params.maxAttempts,
      heartbeatTimeoutMs: params.heartbeatTimeoutMs, state: 'pending', holder: null, claimExpiresAt: null, availableAt: now,
      deadlineAt: new Date(params.deadlineAt.getTime()), lastError: null, createdAt: now,
    };
    this.tasks.set(id, task);
    this.host.taskWoken(task.namespace);
    return structuredClone(task);
  }

  async remoteTaskClaim(params: RemoteTaskClaimParams): Promise<RemoteTask[]> {
    const now = this.host.now();
    const t = now.getTime();
    const claimed: RemoteTask[] = [];
    const candidates = [...this.tasks.values()]
      .filter((task) => task.namespace === params.namespace && task.queue === params.queue && params.tools.includes(task.tool))
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
    for (const task of candidates) {
      if (claimed.length >= params.limit) break;
      const claimable = (task.state === 'pending' && task.availableAt.getTime() <= t)
        || (task.state === 'claimed' && task.claimExpiresAt !== null && task.claimExpiresAt.getTime() <= t);
      if (!claimable || !this.open(task, t)) continue;
      task.attempt += 1;
      task.state = 'claimed';
      task.holder = params.workerId;
      task.claimExpiresAt = new Date(t + task.heartbeatTimeoutMs);
      claimed.push(structuredClone(task));
    }
    return claimed;
  }

  async remoteTaskNextAt(params: RemoteTaskNextAtParams): Promise<number | null> {
    const t = this.host.now().getTime();
    let next: number | null = null;
    for (const task of this.tasks.values()) {
      if (task.namespace !== params.namespace || task.queue !== params.queue || !params.tools.includes(task.tool)) continue;
      const at = task.state === 'pending' ? task.availableAt.getTime() : task.state === 'claimed' ? task.claimExpiresAt?.getTime() : undefined;
      if (at !== undefined && at > t && (next === null || at - t < next)) next = at - t;
    }
    return next;
  }

  async remoteTaskHeartbeat(params: RemoteTaskFence): Promise<RemoteTask | null> {
    const t = this.host.now().getTime();
    const task = this.held(params);
    if (!task || !this.open(task, t)) return null;
    task.claimExpiresAt = new Date(t + task.heartbeatTimeoutMs);
    return structuredClone(task);
  }

  async remoteTaskComplete(params: RemoteTaskCompleteParams): Promise<RemoteTaskCompleteResult> {
    const task = this.held(params);
    if (!task) return { outcome: 'fenced' };
    const facts = this.host.runFacts(task.runId);
    if (!facts || isTerminalStatus(facts.run.status) || this.closedInJournal(task)) {
      task.state = 'done';
      return { outcome: 'closed' };
    }
    // journalResolve does all its work before its first await: the fence, the write and `done` are one step.
    // The result carries its effect's idempotency key, as an in-process tool's terminal entry repeats its intent's.
    const entry = newEntry({ kind: 'tool', name: task.tool, status: 'resolved', payload: params.payload, dedupeKey: params.dedupeKey, idempotencyKey: task.idempotencyKey });
    const resolving = this.host.resolve({ runId: task.runId, suspensionSeq: task.seq, entry });
    const { holder, claimExpiresAt } = task;
    task.state = 'done';
    task.holder = null;
    task.claimExpiresAt = null;
    try {
      return { outcome: 'resolved', resolution: await resolving };
    } catch (error) {
      // Nothing was written (a full journal, a payload too large): the holder still holds the task.
      Object.assign(task, { state: 'claimed', holder, claimExpiresAt });
      throw error;
    }
  }

  async remoteTaskRetry(params: RemoteTaskRetryParams): Promise<boolean> {
    const t = this.host.now().getTime();
    const task = this.held(params);
    if (!task || !this.open(task, t)) return false;
    task.state = 'pending';
    task.holder = null;
    task.claimExpiresAt = null;
    task.availableAt = new Date(t + params.delayMs);
    task.lastError = structuredClone(params.error);
    this.host.taskWoken(task.namespace);
    return true;
  }

  async remoteTaskList(params: RemoteTaskListParams): Promise<RemoteTask[]> {
    return [...this.tasks.values()].filter((t) => t.runId === params.runId).sort((a, b) => a.seq - b.seq).map((t) => structuredClone(t));
  }

  /** The task, when `fence` is its current holder's token and it is not done. */
  private held(fence: RemoteTaskFence): RemoteTask | undefined {
    const task = this.tasks.get(fence.taskId);
    if (!task || task.namespace !== fence.namespace || task.state !== 'claimed' || task.attempt !== fence.attempt || task.holder !== fence.workerId) return undefined;
    return task;
  }

  /** Whether the call is still open: its deadline ahead, its run not ended, its suspension not closed. */
  private open(task: RemoteTask, now: number): boolean {
    if (task.deadlineAt.getTime() <= now) return false;
    const facts = this.host.runFacts(task.runId);
    if (!facts || isTerminalStatus(facts.run.status)) return false;
    return !this.closedInJournal(task);
  }

  private closedInJournal(task: RemoteTask): boolean {
    const facts = this.host.runFacts(task.runId)!;
    if (facts.winners.has(task.seq)) return true;
    return facts.entries.some((e) => e.status === 'cancelled' && e.refSeq === task.seq);
  }
}
