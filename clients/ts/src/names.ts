import { ApprovalState, EntryStatus, RunStatus } from './gen/waymark/v1/run_pb.js';
import { DriftRecovery, WaitFor } from './gen/waymark/v1/run_service_pb.js';

/*
 * Friendly names for the generated enums: string unions a `switch` or a filter can use
 * ('RUNNING' instead of RunStatus.RUNNING), and conversions both ways. The generated enums stay
 * what the messages carry; every option that takes one also takes its name.
 */

export type RunStatusName = 'PENDING' | 'RUNNING' | 'SUSPENDED' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
export type ApprovalStateName = 'PENDING' | 'APPROVED' | 'DENIED' | 'TIMED_OUT' | 'CANCELLED';
export type EntryStatusName = 'RUNNING' | 'OK' | 'ERROR' | 'CANCELLED' | 'SUSPENDED' | 'RESOLVED' | 'NOOP' | 'INFO';
export type DriftRecoveryName = 'RESTART' | 'ABANDON';
/** What StartRun waits for (docs/api.md "Waiting for a run"). */
export type WaitForName = 'FIRST_PARK' | 'OUTSIDE_INPUT' | 'END';

const RUN_STATUS: Record<RunStatusName, RunStatus> = {
  PENDING: RunStatus.PENDING, RUNNING: RunStatus.RUNNING, SUSPENDED: RunStatus.SUSPENDED,
  SUCCEEDED: RunStatus.SUCCEEDED, FAILED: RunStatus.FAILED, CANCELLED: RunStatus.CANCELLED,
};
const APPROVAL_STATE: Record<ApprovalStateName, ApprovalState> = {
  PENDING: ApprovalState.PENDING, APPROVED: ApprovalState.APPROVED, DENIED: ApprovalState.DENIED,
  TIMED_OUT: ApprovalState.TIMED_OUT, CANCELLED: ApprovalState.CANCELLED,
};
const ENTRY_STATUS: Record<EntryStatusName, EntryStatus> = {
  RUNNING: EntryStatus.RUNNING, OK: EntryStatus.OK, ERROR: EntryStatus.ERROR, CANCELLED: EntryStatus.CANCELLED,
  SUSPENDED: EntryStatus.SUSPENDED, RESOLVED: EntryStatus.RESOLVED, NOOP: EntryStatus.NOOP, INFO: EntryStatus.INFO,
};
const DRIFT_RECOVERY: Record<DriftRecoveryName, DriftRecovery> = { RESTART: DriftRecovery.RESTART, ABANDON: DriftRecovery.ABANDON };
const WAIT_FOR: Record<WaitForName, WaitFor> = { FIRST_PARK: WaitFor.FIRST_PARK, OUTSIDE_INPUT: WaitFor.OUTSIDE_INPUT, END: WaitFor.END };

function nameOf<N extends string, E extends number>(table: Record<N, E>, value: E): N | 'UNSPECIFIED' {
  for (const [name, v] of Object.entries(table) as [N, E][]) if (v === value) return name;
  return 'UNSPECIFIED';
}

function valueOf<N extends string, E extends number>(table: Record<N, E>, value: N | E, what: string): E {
  if (typeof value === 'number') return value;
  const v = table[value];
  if (v === undefined) throw new TypeError(`unknown ${what} "${String(value)}"; one of ${Object.keys(table).join(', ')}`);
  return v;
}

/** 'RUNNING' for RunStatus.RUNNING; 'UNSPECIFIED' for 0 and values this client does not know. */
export function runStatusName(status: RunStatus): RunStatusName | 'UNSPECIFIED' {
  return nameOf(RUN_STATUS, status);
}

export function approvalStateName(state: ApprovalState): ApprovalStateName | 'UNSPECIFIED' {
  return nameOf(APPROVAL_STATE, state);
}

export function entryStatusName(status: EntryStatus): EntryStatusName | 'UNSPECIFIED' {
  return nameOf(ENTRY_STATUS, status);
}

/** The enum value of a status given by name or value (TypeError for an unknown name). */
export function toRunStatus(status: RunStatus | RunStatusName): RunStatus {
  return valueOf(RUN_STATUS, status, 'run status');
}

export function toApprovalState(state: ApprovalState | ApprovalStateName): ApprovalState {
  return valueOf(APPROVAL_STATE, state, 'approval state');
}

export function toDriftRecovery(recovery: DriftRecovery | DriftRecoveryName): DriftRecovery {
  return valueOf(DRIFT_RECOVERY, recovery, 'drift recovery');
}

/** True when a run in this status has ended (SUCCEEDED, FAILED or CANCELLED). */
export function isTerminal(status: RunStatus | RunStatusName): boolean {
  const s = toRunStatus(status);
  return s === RunStatus.SUCCEEDED || s === RunStatus.FAILED || s === RunStatus.CANCELLED;
}

/** The enum value of a wait given by name or value (TypeError for an unknown name). */
export function toWaitFor(waitFor: WaitFor | WaitForName): WaitFor {
  return valueOf(WAIT_FOR, waitFor, 'wait');
}
