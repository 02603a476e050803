import { journalUsage, type Limits } from '../../journal/limits.js';
import { CONTINUE_LABELS, FORK_LABELS } from '../../journal/fork-labels.js';
import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Waiting } from '../../engine/index.js';
import type { Workflow as DomainWorkflow } from '../../engine/index.js';
import {
  DriftPolicy, RunErrorSchema, RunSchema, RunStatus, WaitingOnSchema, WorkflowSchema, type Run, type RunError, type WaitingOn,
  type Workflow,
} from '../../gen/waymark/v1/run_pb.js';
import { RUN_STATUSES, type Run as DomainRun, type RunError as DomainRunError, type RunStatus as DomainRunStatus } from '../../journal/run.js';
import { optionalValue, valueFromJson } from './convert-json.js';

/* Runs, run errors, waits and workflows: domain -> proto (the API only ever sends these). */

export function runStatusToProto(status: DomainRunStatus): RunStatus {
  return RunStatus[status];
}

/**
 * A status filter from the wire: UNSPECIFIED matches nothing (the proto says so), so it is
 * dropped; `invalid` lists values this server does not know (a newer client's enum).
 */
export function runStatusesFromProto(statuses: RunStatus[]): { statuses: DomainRunStatus[]; invalid: number[] } {
  const out: DomainRunStatus[] = [];
  const invalid: number[] = [];
  for (const s of statuses) {
    if (s === RunStatus.UNSPECIFIED) continue;
    const name = RunStatus[s] as DomainRunStatus | undefined;
    if (name !== undefined && RUN_STATUSES.includes(name)) out.push(name);
    else invalid.push(s);
  }
  return { statuses: out, invalid };
}

export function runErrorToProto(error: DomainRunError): RunError {
  return create(RunErrorSchema, {
    name: error.name, message: error.message, reason: error.reason ?? '', details: optionalValue(error.details),
  });
}

/**
 * `spentUsd`: what the caller folded from the journal (GetRun: the run and its children, as budgets
 * count it; ListRuns: the run's own entries); 0 where nothing was folded.
 */
/** `limits`: the server's journal limits, for `journal_near_limit` (GetRun, ListRuns); absent: false. */
export function runToProto(run: DomainRun, spentUsd = 0, limits?: Pick<Limits, 'journalEntries' | 'journalBytes'>): Run {
  return create(RunSchema, {
    id: run.id,
    namespace: run.namespace,
    workflowName: run.workflowName,
    workflowVersion: run.workflowVersion,
    workflowDigest: run.workflowDigest,
    status: runStatusToProto(run.status),
    input: valueFromJson(run.input),
    output: run.status === 'SUCCEEDED' ? valueFromJson(run.output) : undefined,
    error: run.error ? runErrorToProto(run.error) : undefined,
    labels: run.labels,
    idempotencyKey: run.idempotencyKey ?? '',
    parentRunId: run.parentRunId ?? '',
    budgetUsd: run.budgetUsd ?? undefined,
    spentUsd,
    dryRun: run.dryRun,
    createTime: timestampFromDate(run.createdAt),
    updateTime: timestampFromDate(run.updatedAt),
    nextSeq: BigInt(run.nextSeq),
    deadlineTime: run.deadlineAt ? timestampFromDate(run.deadlineAt) : undefined,
    forkedFromRunId: run.labels[FORK_LABELS.source] ?? '',
    forkSeq: run.labels[FORK_LABELS.seq] !== undefined ? BigInt(run.labels[FORK_LABELS.seq]!) : undefined,
    journalBytes: BigInt(run.journalBytes),
    journalNearLimit: limits ? journalUsage(run, limits).near : false,
    continuedAsRunId: run.labels[CONTINUE_LABELS.as] ?? '',
    continuedFromRunId: run.labels[CONTINUE_LABELS.from] ?? '',
  });
}

export function waitingToProto(waiting: Waiting): WaitingOn {
  return create(WaitingOnSchema, {
    kind: waiting.kind,
    name: waiting.kind === 'approval' ? waiting.title : waiting.name,
    seq: BigInt(waiting.seq),
    approvalId: waiting.approvalId ?? '',
    deadline: waiting.deadlineAt ? timestampFromDate(new Date(waiting.deadlineAt)) : undefined,
    liveWorkers: waiting.remote?.liveWorkers ?? 0,
    detail: waiting.remote?.detail ?? waiting.backoff?.detail ?? '',
  });
}

export function workflowToProto(
  workflow: Pick<DomainWorkflow, 'name' | 'version' | 'digest' | 'description' | 'drift'> & { inputSchema: DomainWorkflow['inputSchema'] | null; timeoutMs?: number | null },
  replicas: string[] = [],
): Workflow {
  return create(WorkflowSchema, {
    replicas,
    name: workflow.name,
    version: workflow.version,
    digest: workflow.digest,
    description: workflow.description,
    inputSchema: valueFromJson(workflow.inputSchema),
    driftPolicy: workflow.drift === 'strict' ? DriftPolicy.STRICT : DriftPolicy.WARN,
    timeout: workflow.timeoutMs ? durationFromMs(workflow.timeoutMs) : undefined,
  });
}
