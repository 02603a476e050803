import type { Json } from '../journal/run.js';
import type { JournalResolveResult } from './journal-params.js';

/*
 * Parameters and results of the JournalStore's remote-tool methods (RemoteTaskOps, at the end of this file, says what each does;
 * docs/workers.md the protocol they serve). A task is one remote tool call: the `suspended`
 * journal entry of the call (run id, seq) plus who holds it. `attempt` is the fencing token.
 */

/** What a worker declares about one tool it serves (WorkerService ToolDeclaration, defaults applied). */
export interface RemoteToolDeclaration {
  name: string;
  description: string;
  /** JSON Schema of the arguments; null: any JSON value. */
  inputSchema: Json | null;
  /** JSON Schema of the result (shown, not enforced); null: none declared. */
  outputSchema: Json | null;
  mutating: boolean;
  policy: 'allow' | 'ask' | 'deny';
  /** The whole call, from its intent to its result, across redispatches. */
  timeoutMs: number;
  /** A claim lasts this long without a heartbeat. */
  heartbeatTimeoutMs: number;
  /** Dispatches a call gets when the worker reports retryable failures. */
  maxAttempts: number;
  /** '' is the default queue. */
  queue: string;
}

export interface WorkerHeartbeatParams {
  namespace: string;
  workerId: string;
  /** Given: the worker's declaration replaces its previous one (and each tool's latest declaration). Absent: only liveness. */
  tools?: RemoteToolDeclaration[];
  ttlMs: number;
}

export interface RemoteToolListParams {
  namespace: string;
  /** Only this tool. */
  name?: string;
}

/** A declared remote tool and the live workers serving it now. */
export interface RemoteToolInfo {
  namespace: string;
  declaration: RemoteToolDeclaration;
  declaredAt: Date;
  /** Ids of live workers that serve it, sorted. */
  workers: string[];
}

export interface RemoteTaskCreateParams {
  namespace: string;
  runId: string;
  /** The seq of the call's `suspended` entry. */
  seq: number;
  tool: string;
  queue: string;
  input: Json;
  idempotencyKey: string;
  maxAttempts: number;
  heartbeatTimeoutMs: number;
  deadlineAt: Date;
}

export type RemoteTaskState = 'pending' | 'claimed' | 'done';

export interface RemoteTask {
  /** `<run id>:<seq>`. */
  id: string;
  namespace: string;
  runId: string;
  seq: number;
  tool: string;
  queue: string;
  input: Json;
  idempotencyKey: string;
  /** Claims so far (0 before the first); the current holder's fencing token. */
  attempt: number;
  maxAttempts: number;
  heartbeatTimeoutMs: number;
  state: RemoteTaskState;
  holder: string | null;
  claimExpiresAt: Date | null;
  /** A retry's backoff: not claimable before. */
  availableAt: Date;
  deadlineAt: Date;
  /** The last retryable failure a worker reported, or null. */
  lastError: Json | null;
  createdAt: Date;
}

export interface RemoteTaskClaimParams {
  namespace: string;
  workerId: string;
  /** Tool names the worker takes tasks of. */
  tools: string[];
  queue: string;
  limit: number;
}

export interface RemoteTaskNextAtParams {
  namespace: string;
  tools: string[];
  queue: string;
}

export interface RemoteTaskFence {
  /** The worker's namespace: a task of another namespace is fenced. */
  namespace: string;
  /** `<run id>:<seq>`. */
  taskId: string;
  workerId: string;
  /** The fencing token the claim handed out. */
  attempt: number;
}

export interface RemoteTaskCompleteParams extends RemoteTaskFence {
  /** The payload of the call's resolution (a `tool` entry named for the task's tool; the store sets status and refSeq). */
  payload: Json;
  /** Journal dedupe key of the resolution. */
  dedupeKey: string;
}

export type RemoteTaskCompleteResult =
  /** The holder's token is not the current one (or the task is unknown, or done): nothing written. */
  | { outcome: 'fenced' }
  /** The call was closed already (its deadline passed, the run was cancelled or ended): the task is done, nothing written. */
  | { outcome: 'closed' }
  /** The entry was journaled as the suspension's resolution, and the task is done. */
  | { outcome: 'resolved'; resolution: JournalResolveResult };

export interface RemoteTaskRetryParams extends RemoteTaskFence {
  /** Not claimable again before this many ms (store clock). */
  delayMs: number;
  error: Json;
}

export interface RemoteTaskListParams {
  runId: string;
}

/**
 * Remote tools: workers, their declared tools, and the tasks of remote tool calls. Part of
 * JournalStore (store.ts), whose contract holds for each method.
 */
export interface RemoteTaskOps {
  /**
   * Remote tools (remote-task-params.ts; docs/workers.md). workerHeartbeat marks a worker live for
   * `ttlMs` (store clock); with `tools` it also replaces the worker's tool list and upserts each
   * tool's declaration (the latest wins; declarations outlive their workers). Returns false when
   * `tools` is absent and the worker is unknown (it must register).
   */
  workerHeartbeat(params: WorkerHeartbeatParams): Promise<boolean>;
  /** A clean stop: the worker serves nothing from now on; its claimed tasks lapse as they would. */
  workerRemove(params: { namespace: string; workerId: string }): Promise<void>;
  /** The namespace's declared remote tools by name, each with its live workers. */
  remoteToolList(params: RemoteToolListParams): Promise<RemoteToolInfo[]>;
  /**
   * Creates the task of the remote tool call journaled as the `suspended` entry (runId, seq), or
   * returns the existing one unchanged (a repeat after a crash). RunNotFoundError for an unknown run.
   */
  remoteTaskCreate(params: RemoteTaskCreateParams): Promise<RemoteTask>;
  /**
   * Claims up to `limit` tasks of `tools` in `queue`, oldest first: pending ones past their
   * `availableAt`, and claimed ones whose claim lapsed (a redispatch). Each claim bumps `attempt`
   * (the new fencing token), sets the holder and a claim of the task's heartbeat timeout. Only
   * tasks whose call is open: deadline not passed, suspension with no winning or cancelling
   * entry, run not terminal. Two claimers never get one task, and neither waits for the other's.
   */
  remoteTaskClaim(params: RemoteTaskClaimParams): Promise<RemoteTask[]>;
  /**
   * Milliseconds until the next task of these tools and queue becomes claimable by time alone (a
   * retry's backoff ends, a claim lapses), or null when none will: what a long poll sleeps for
   * between wake-ups (`onTask` covers tasks created or retried).
   */
  remoteTaskNextAt(params: RemoteTaskNextAtParams): Promise<number | null>;
  /** Extends the holder's claim by the task's heartbeat timeout; null when fenced (another token, done, or the call closed). */
  remoteTaskHeartbeat(params: RemoteTaskFence): Promise<RemoteTask | null>;
  /**
   * The holder's result: under the run-row lock, checks the fence, then appends `entry` as the
   * resolution of the call's suspension (what journalResolve does, the run made claimable) and
   * marks the task done, atomically. A stale token writes nothing (`fenced`); a call already
   * closed marks the task done and writes nothing (`closed`).
   */
  remoteTaskComplete(params: RemoteTaskCompleteParams): Promise<RemoteTaskCompleteResult>;
  /** The holder's retryable failure: the task is pending again after `delayMs`; false when fenced. */
  remoteTaskRetry(params: RemoteTaskRetryParams): Promise<boolean>;
  /** A run's tasks, by seq. */
  remoteTaskList(params: RemoteTaskListParams): Promise<RemoteTask[]>;
}
