import { Code } from '@connectrpc/connect';
import { WaymarkError } from './errors.js';
import type { Approval, Run, WaitingOn } from './gen/waymark/v1/run_pb.js';

/*
 * What the wrapper's methods return: the generated messages, with the fields the server always
 * sets typed as present (protobuf-es types every message field as optional).
 */

/** StartRun's answer. */
export interface StartRunResult {
  run: Run;
  /** False when the idempotency key returned a run an earlier call started. */
  created: boolean;
  /** What the run waits for, when it answered SUSPENDED (with `wait`). */
  waitingOn: WaitingOn[];
  /**
   * The run reached what the call waited for (`waitFor`, or `wait`); false when the call did not
   * wait or its `timeoutMs` came first (the run goes on).
   */
  waitComplete: boolean;
}

/** GetRun's answer. */
export interface RunState {
  run: Run;
  /** What the run waits for, when it is SUSPENDED. */
  waitingOn: WaitingOn[];
  /** The ids of the runs forked from this one, newest first (at most 100). */
  forks: string[];
}

/** ForkRun's answer. */
export interface ForkResult {
  /** The fork. */
  run: Run;
  /** False when the idempotency key returned a fork an earlier call created. */
  created: boolean;
  /** The fork point, after moving to the first entry of its effect. */
  forkSeq: bigint;
  /** What the fork waits for, when it answered SUSPENDED (with `wait`). */
  waitingOn: WaitingOn[];
}

/** ResumeRun's answer. */
export interface ResumeResult {
  /** The run after the resume was accepted. */
  run: Run;
  /** The new run, when driftRecovery was RESTART. */
  restartedAs: Run | undefined;
}

/** DecideApproval's answer, for a decision that was applied (a lost one throws AlreadyResolved). */
export interface DecisionResult {
  approval: Approval;
  applied: boolean;
  /** "" for a decision applied now, "duplicate" for a repeated request id whose first decision was applied. */
  reason: string;
}

/** A field the server always sets; a response without it is a protocol error, not undefined. */
export function required<T>(value: T | undefined, field: string, rpc: string): T {
  if (value === undefined) throw new WaymarkError(Code.Internal, `the server's ${rpc} response has no ${field}`);
  return value;
}
