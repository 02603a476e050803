// runtime/: RemoteCalls, what a replica knows of remote tools (declarations, cached) and how a call becomes a task.
// Must not journal anything: the call's entries go through effect-runner; this only reads declarations and writes tasks.
import { EventEmitter } from 'node:events';
import type { JournalStore, RemoteTask, RemoteTaskCreateParams, RemoteToolDeclaration, RemoteToolInfo } from '../../store/store.js';
import type { Tool } from '../author/tool.js';
import type { Waiting } from './suspension.js';
import { toolStandIn } from './tool-stand-in.js';

/*
 * Remote tools (docs/workers.md): tools served by workers over WorkerService. A run's ctx.tool for
 * a name no in-process tool has asks `declaration()` (the latest declaration any worker made, from
 * the store, cached per replica for `cacheMs`); the call's suspension then becomes a task with
 * `dispatch()`. Workers' long polls on this replica are woken at once by a dispatch here (`woken`),
 * and by the store's task wake-up (one subscription per replica, fanned out here) for a task
 * created or retried on any replica; a task claimable by time alone is waited for by its time
 * (remoteTaskNextAt). An idle poll issues no store reads (docs/workers.md "Idle polls").
 */

export const REMOTE_DEFAULTS = {
  /** How long a replica trusts a declaration it read (a worker's new declaration reaches calls within it). */
  cacheMs: 1_000,
  /**
   * An idle long poll's safety re-check: the task wake-up and remoteTaskNextAt find every task, so
   * this only bounds a wake-up lost other than by a lost LISTEN connection (that one resyncs).
   */
  pollEveryMs: 30_000,
  /** How soon a poll looks again while the store's wake-ups cannot be subscribed to (it is down). */
  retryMs: 1_000,
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
  return toolStandIn({ ...d, inputSchema: d.inputSchema ?? {} }, 'remote');
}

export class RemoteCalls {
  readonly pollEveryMs: number;
  private readonly cacheMs: number;
  private readonly cache = new Map<string, { at: number; info: Promise<RemoteToolInfo | null> }>();
  private readonly dispatched = new EventEmitter();
  private subscribed: Promise<unknown> | null = null;

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

  /**
   * Subscribes this replica to the store's task wake-ups, once: true when subscribed (false while
   * the store is down; the next call tries again). A resync (the LISTEN connection came back, its
   * notifications lost) wakes every poll.
   */
  private async subscribe(): Promise<boolean> {
    this.subscribed ??= this.store.wakeupSubscribe({
      onTask: (namespace) => this.dispatched.emit('task', namespace),
      onResync: () => this.dispatched.emit('task', null),
    }).catch((err: unknown) => {
      this.subscribed = null;
      throw err;
    });
    return this.subscribed.then(() => true, () => false);
  }

  /**
   * Listens for task wake-ups of `namespace` (a dispatch on this replica or, through the store, on
   * any) from now on, so the caller can look at the store and then `wait`: a wake-up landing in
   * between ends the next wait at once. `wait(ms)` resolves at a wake-up, after `ms`, or when
   * `signal` fires; `close` stops listening.
   */
  async listen(namespace: string, signal: AbortSignal): Promise<{ wait: (ms: number) => Promise<void>; close: () => void }> {
    const live = await this.subscribe();
    let fired = false;
    let wake: (() => void) | null = null;
    const onTask = (ns: string | null): void => {
      if (ns !== namespace && ns !== null) return;
      fired = true;
      wake?.();
    };
    this.dispatched.on('task', onTask);
    const wait = (ms: number): Promise<void> => new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        wake = null;
        fired = false;
        resolve();
      };
      const timer = setTimeout(done, live ? ms : Math.min(ms, REMOTE_DEFAULTS.retryMs));
      if (fired || signal.aborted) done();
      else {
        wake = done;
        signal.addEventListener('abort', done, { once: true });
      }
    });
    return { wait, close: () => this.dispatched.off('task', onTask) };
  }
}
