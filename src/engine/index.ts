// engine/: the front door: everything server/, sweeper/, webhooks/, agent/ and cli/ may import from the engine.
// Must not hold code of its own, only re-exports; lint forbids those folders any other engine file (eslint.config.js).
/*
 * The engine's one door (docs/architecture.md "The front door"). What lies behind it (the rooms of
 * src/engine/) may move without touching its callers; adding a name here is a decision about the
 * engine's surface, made in review. The package root (src/index.ts) is another door, for workflow
 * authors, and exports less.
 */
export { RecoveryOperations } from './recovery-operations.js';
export { PARENT_TIMED_OUT } from './runtime/run-ending.js';
export { API_KEY_DEFAULTS, ApiKeys, SCOPES, isScope } from './access/api-keys.js';
export type { ApiKey, KeyVerification, Scope } from './access/api-keys.js';
export { PayloadSealer, parseSealingKeys } from './access/payload-sealer.js';
export type { SealingKey } from './access/payload-sealer.js';
export { MIN_SECRET_LENGTH, STREAM_TOKEN_DEFAULTS, StreamTokens, isStreamToken } from './access/stream-tokens.js';
export type { AgentHost, AgentMessage, AgentOptions, AgentResult, AgentRuntime, AgentToolCall, ModelCallOutcome, ModelDeltaSink } from './author/agent-contract.js';
export { durationMs } from './author/duration.js';
export type { EffectAttempt, EffectEnd, EffectSpan, EffectTracer, RemoteTaskAttempt } from './runtime/effect-tracer.js';
export type { McpConnector, McpServerHealth, McpServerRecord, McpToolListing, McpToolRule, McpTransport, McpSecretRef, McpTaskAnswer, McpTaskHandle, McpTaskOutcome } from './runtime/mcp-connector.js';
export { retryAfterHeaderMs } from './author/retry.js';
export type { FailureClass } from './author/retry.js';
export { isTool } from './author/tool.js';
export type { Tool } from './author/tool.js';
export { isWorkflow } from './author/workflow.js';
export type { Workflow } from './author/workflow.js';
export { ApprovalNotFoundError, DefinitionError, FlowDriftError, FlowNameTakenError, FlowNotFoundError, InvalidDeclarationError, InvalidFlowError, InvalidForkError, InvalidInputError, InvalidResolutionError, InvalidateTargetError, JournalCorruptError, JournalExportError, McpServerNotFoundError, McpToolDriftError, NonDeterminismError, NotJsonError, RunsNotComparableError, ToolNotFoundError } from './errors.js';
export type { FieldViolation } from './errors.js';
export type { FlowRecord } from './flow/flow-catalog.js';
export type { FlowDefinition } from './flow/flow-definition.js';
export { APPROVAL_STATES } from './read/approvals.js';
export type { ApprovalState, ApprovalView } from './read/approvals.js';
export { effectContentKey } from './read/effects.js';
export type { EffectView, RunEffects } from './read/effects.js';
export { InvalidPageTokenError } from './read/page-token.js';
export { statusOf } from './read/run-events.js';
export type { ComparedEffect, EffectComparison, EffectDifference, RunComparison, RunTotals } from './read/run-compare.js';
export type { ForkPreview } from './runtime/run-fork.js';
export { needsOutsideInput } from './read/run-wait.js';
export type { WaitFor } from './read/run-wait.js';
export { runProvenance } from './read/run-provenance.js';
export type { AgentProvenance, AgentProvenanceReader, ProvenanceModelCall, ProvenanceToolResult, RunProvenance } from './read/run-provenance.js';
export { MAX_SPEND_DEPTH, roundUsd, runSpend } from './read/spend.js';
export { Registry } from './registry.js';
export { canonicalJson, sha256Hex, toJson } from './replay/content-key.js';
export { ReplicaEngine } from './replica-engine.js';
export { RunEngine } from './run-engine.js';
export { PURGE_DEFAULTS } from './run-purge.js';
export type { RunPurgeFilter, RunPurgeSummary } from './run-purge.js';
export type { RunDefinition } from './run-engine.js';
export { TERMINATED_REASON, schedulePass } from './schedules/schedule-pass.js';
export type { PassOutcome, SchedulePassDeps } from './schedules/schedule-pass.js';
export { SCHEDULES_DEFAULTS, Schedules } from './schedules/schedules.js';
export type { ScheduleCreate, ScheduleEdit, ScheduleView } from './schedules/schedules.js';
export { scheduleSpecViolations } from './schedules/schedule-times.js';
export { RESUME_CACHE_DEFAULTS } from './runtime/resume-cache.js';
export type { ReplayPreview } from './runtime/resume-preview.js';
export { replayJournal } from './runtime/journal-replay.js';
export type { ReplayCheckOptions, ReplayCheckReport, ReplayWorkflows } from './runtime/journal-replay.js';
export type { ReplayDivergence } from './runtime/call-order.js';
export { JOURNAL_EXPORT_FORMAT, parseJournalExport } from './replay/journal-export.js';
export type { JournalExport } from './replay/journal-export.js';
export type { Waiting } from './runtime/suspension.js';
export { WORKER_DEFAULTS } from './runtime/worker-tasks.js';
export type { RemoteTask, RemoteToolDeclaration } from './runtime/worker-tasks.js';
export { DUE_TIMERS_DEFAULTS, DueTimers } from './scheduling/due-timers.js';
export { EXECUTOR_DEFAULTS, Executor } from './scheduling/executor.js';
export { REPLICA_DEFAULTS, ReplicaPresence } from './scheduling/replica-presence.js';
/** Model call deltas as StreamRunEvents weaves them in (docs/agents.md "Token streams"). */
export type { FollowItem } from '../store/run-follow.js';
export type { ModelDelta } from '../store/model-delta-params.js';
