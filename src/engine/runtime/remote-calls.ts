// runtime/: RemoteCalls, what a replica knows of remote tools (declarations, cached) and how a call becomes a task.
// Must not journal anything: the call's entries go through effect-runner; this only reads declarations and writes tasks.
import { EventEmitter } from 'node:events';
import { z } from 'zod';
import type { JournalStore, RemoteTask, RemoteTaskCreateParams, RemoteToolDeclaration, RemoteToolInfo } from '../../store/store.js';
import { TOOL_RETRY_DEFAULT } from '../author/retry.js';
import { TOOL_BRAND, type Tool } from '../author/tool.js';
import type { Waiting } from './suspension.js';

/*
 * Remote tools (docs/workers.md): tools served by workers over WorkerService. A run's ctx.tool for
 * a name no in-process tool has asks `declaration()` (the latest declaration any worker made, from
 * the store, cached per replica for `cacheMs`); the call's suspension then becomes a task with
 * `dispatch()`. Workers' long polls on this replica are woken at once by a dispatch here (`woken`);
 * a task dispatched on another replica is found by the poll's next look at the store.
 */

export const REMOTE_DEFAULTS = {
  /** How long a replica trusts a declaration it read (a worker's new declaration reaches calls within it). */
  cacheMs: 1_000,
  /** How often a long poll looks at the store for tasks dispatched on other replicas. */
  pollEveryMs: 250,
} as const;

export interface RemoteCallsOptions {
  cacheMs?: number;
  pollEveryMs?: number;
}

/**
 * A Tool standing for a remote tool in an agent's tool list: what the model sees (name,
 * description, declared input schema) and the policy; it is never executed here (`remote`: the
 * agent host calls it by name through ctx.tool's remote path).
 */
export function remoteToolStandIn(d: RemoteToolDeclaration): Tool {
  return Object.freeze({
    [TOOL_BRAND]: true as const,
    name: d.name,
    description: d.description,
    input: z.unknown(),
    inputSchema: d.inputSchema ?? {},
    policy: d.policy,
    retry: TOOL_RETRY_DEFAULT,
    timeoutMs: d.timeoutMs,
    remote: true,
    isMutating: () => d.mutating,
    execute: async (): Promise<unknown> => {
      throw new Error(`internal: remote tool "${d.name}" was executed in process; it is dispatched to a worker`);
    },
  });
}

export class RemoteCalls {
  readonly pollEveryMs: number;
  private readonly cacheMs: number;
  private readonly cache = new Map<string, { at: number; info: Promise<RemoteToolInfo | null> }>();
  private readonly dispatched = new EventEmitter();

  constructor(private readonly store: JournalStore, options: RemoteCallsOptions = {}) {
    this.cacheMs = options.cacheMs ?? REMOTE_DEFAULTS.cacheMs;
    this.pollEveryMs = options.pollEveryMs ?? REMOTE_DEFAULTS.pollEveryMs;
    this.dispatched.setMaxListeners(0);
  }

  /** The latest declaration of remote tool `name` in `namespace`, with its live workers; null when none was ever declared. */
  declaration(namespace: string, name: string): Promise<RemoteToolInfo | null> {
    const key = `${namespace}\u0000${name}`;
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && now - hit.at < this.cacheMs) return hit.info;
    const info = this.store.remoteToolList({ namespace, name }).then((list) => list[0] ?? null);
    this.cache.set(key, { at: now, info });
    info.catch(() => this.cache.delete(key));
    return info;
  }

  /** Forgets what this replica cached of a namespace's tools (a worker registered here). */
  forget(namespace: string): void {
    for (const key of this.cache.keys()) if (key.startsWith(`${namespace}\u0000`)) this.cache.delete(key);
  }

  /**
   * GetRun's view of a run's remote calls (`waits` of kind tool): how many live workers serve each
   * tool, and who holds its task or that it waits for a worker.
   */
  async describe(run: { runId: string; namespace: string }, waits: Waiting[]): Promise<Waiting[]> {
    const [tools, tasks] = await Promise.all([
      this.store.remoteToolList({ namespace: run.namespace }),
      this.store.remoteTaskList({ runId: run.runId }),
    ]);
    return waits.map((w) => {
      // A retry's backoff is a timer (the built-in http tool's included), not a call waiting for a worker.
      if (w.kind !== 'tool' || w.backoff) return w;
      const workers = tools.find((t) => t.declaration.name === w.name)?.workers ?? [];
      const task = tasks.find((t) => t.seq === w.seq);
      const after = task && task.attempt > 0 ? `, after ${task.attempt} attempt${task.attempt === 1 ? '' : 's'}` : '';
      const detail = task?.state === 'claimed' && task.holder !== null
        ? `worker ${task.holder} (attempt ${task.attempt})`
        : workers.length === 0
          ? `no worker serves tool ${w.name}: the call waits until one connects (waymark tools list)${after}`
          : `a worker of tool ${w.name} (${workers.length} connected)${after}`;
      return { ...w, remote: { liveWorkers: workers.length, detail } };
    });
  }

  /** Creates the call's task (idempotent per suspension) and wakes this replica's polls of its tool. */
  async dispatch(params: RemoteTaskCreateParams): Promise<RemoteTask> {
    const task = await this.store.remoteTaskCreate(params);
    this.dispatched.emit('task', task.namespace);
    return task;
  }

  /** Tells this replica's polls that a task may be claimable now (a retry, a result that freed a worker). */
  wake(namespace: string): void {
    this.dispatched.emit('task', namespace);
  }

  /** Resolves at the next dispatch on this replica for `namespace`, after `ms`, or when `signal` fires. */
  woken(namespace: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.dispatched.off('task', onTask);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const onTask = (ns: string): void => {
        if (ns === namespace) done();
      };
      const timer = setTimeout(done, ms);
      this.dispatched.on('task', onTask);
      if (signal.aborted) done();
      else signal.addEventListener('abort', done, { once: true });
    });
  }
}
