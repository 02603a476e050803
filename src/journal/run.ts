/** The lifecycle of a run. PENDING runs are claimable; SUSPENDED runs hold no lease. */
export const RUN_STATUSES = ['PENDING', 'RUNNING', 'SUSPENDED', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

export function isTerminalStatus(status: RunStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}

/** JSON as it is stored in the journal and carried as google.protobuf.Value on the wire. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A failure as it is recorded: enough to re-throw the same error on replay. */
export interface RunError {
  /** The error class name, e.g. `ToolApprovalDeniedError`. */
  name: string;
  message: string;
  /** A machine-readable reason, e.g. `budget_exceeded`, `interrupted`. */
  reason?: string;
  details?: Json;
}

export interface Run {
  id: string;
  namespace: string;
  workflowName: string;
  workflowVersion: string;
  /** Digest of the workflow definition the run was started with (drift detection). */
  workflowDigest: string;
  status: RunStatus;
  input: Json;
  output: Json | null;
  error: RunError | null;
  labels: Record<string, string>;
  idempotencyKey: string | null;
  parentRunId: string | null;
  /** The seq of the parent's `child` suspension this run resolves when it ends. */
  parentSeq: number | null;
  budgetUsd: number | null;
  dryRun: boolean;
  leaseHolder: string | null;
  leaseExpiresAt: Date | null;
  leaseEpoch: number;
  /** The seq the next journal entry will get (= number of entries). */
  nextSeq: number;
  /** Bytes of the payloads (JSON text) the run's executions journaled: what limits.journalBytes bounds. */
  journalBytes: number;
  /** How many times in a row the sweeper made this run claimable again with no journal append in between. */
  recoveryCount: number;
  /** The run timeout's deadline (database clock, set at creation); null: none. The sweeper fails the run once it passes. */
  deadlineAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Proof of holding a run's lease; every fenced write carries it. */
export interface Lease {
  runId: string;
  holder: string;
  epoch: number;
  expiresAt: Date;
}
