import { WaymarkError } from './errors.js';

/* Domain errors of remote tools and their workers (docs/workers.md). */

/** A poll or heartbeat from a worker the store does not know (never registered, or expired long ago and removed). */
export class WorkerNotFoundError extends WaymarkError {
  readonly reason = 'WORKER_NOT_FOUND';
  constructor(readonly workerId: string) {
    super(`worker ${workerId} is not registered in this namespace; call RegisterWorker (again) with the tools it serves`);
  }
}

/**
 * A heartbeat or result from a worker that no longer holds the task: it was dispatched to another
 * worker (this one's claim lapsed), or the call was closed (its deadline passed, its run ended).
 * Nothing of the call is journaled; stop working on it.
 */
export class TaskLostError extends WaymarkError {
  readonly reason = 'TASK_LOST';
  constructor(readonly taskId: string, readonly fencingToken: number) {
    super(`task ${taskId} is no longer held under fencing token ${fencingToken} (another worker took it over, or the call was closed): its result is refused; stop working on it`);
  }
}
