/**
 * The `waymark` package root: the workflow API a user's module imports
 * (`import { defineWorkflow, defineTool } from 'waymark'`), the error classes a workflow may
 * catch, and the RunEngine for embedding. Transport, CLI and SQL are not exported (eslint enforces it).
 */
export { defineWorkflow, isWorkflow, DEFAULT_APPROVAL_SCHEMA } from './engine/author/workflow.js';
export type {
  ApprovalDecision, ApprovalRequest, DriftPolicy, SignalOptions, StepInfo, StepOptions, ToolCallOptions, Workflow, WorkflowContext, WorkflowDefinition,
} from './engine/author/workflow.js';
export { defineTool, isTool } from './engine/author/tool.js';
export type { Tool, ToolCallInfo, ToolDefinition, ToolPolicy } from './engine/author/tool.js';
export type { Duration } from './engine/author/duration.js';
export { Registry } from './engine/registry.js';
// eslint-disable-next-line import-x/no-cycle -- user-module.ts imports this file lazily, for require('waymark') (its one exception)
export { loadUserModule, type LoadedModule } from './engine/user-module.js';
export { httpTool, echoTool } from './engine/author/builtin-tools.js';
export { RunEngine } from './engine/run-engine.js';
export type { RunEngineOptions, RunStartParams } from './engine/run-engine.js';
export type { ExecuteOutcome, ExecuteResult } from './engine/runtime/execute-result.js';
export type { ReplayPreview } from './engine/runtime/resume-preview.js';
/** The replay check of `waymark replay` for tests (docs/replay.md "In tests"). */
export { replayJournal, type ReplayCheckOptions, type ReplayCheckReport, type ReplayWorkflows } from './engine/runtime/journal-replay.js';
export type { ReplayDivergence } from './engine/runtime/call-order.js';
export { parseJournalExport, JOURNAL_EXPORT_FORMAT, type JournalExport } from './engine/replay/journal-export.js';
/** The in-memory store: for testing workflows (docs/workflows.md "Testing a workflow"). */
export { MemoryStore } from './store/memory/memory-store.js';
export type { ApprovalDecideParams, ResolveResult } from './engine/runtime/resolutions.js';
export type { SignalSendParams, SignalSendResult } from './engine/runtime/signal-inbox.js';
export type { Waiting } from './engine/runtime/suspension.js';
export {
  ApprovalNotFoundError, ChildRunFailedError, DefinitionError, EffectFailedError, FlowDriftError, InvalidateTargetError,
  InvalidInputError, InvalidOutputError, InvalidResolutionError, JournalCorruptError, JournalExportError, JournalMissError, NonDeterminismError,
  NotJsonError, SignalTimeoutError, ToolApprovalDeniedError, ToolNotFoundError,
  EffectTimeoutError, NonRetryableError, RetriesExhaustedError, RunTimedOutError,
  FlowNameTakenError, FlowNotFoundError, FlowRunError, InvalidFlowError, McpServerNotFoundError, McpToolDriftError,
} from './engine/errors.js';
export type { RetryOptions } from './engine/author/retry.js';
export type { FieldViolation } from './engine/errors.js';
export {
  IdempotencyConflictError, JournalFullError, LeaseLostError, PayloadTooLargeError, RunNotFoundError, RunStateError,
  StoreUnavailableError, WaymarkError, WorkflowNotFoundError,
} from './journal/errors.js';
export type { Json, Run, RunError, RunStatus } from './journal/run.js';
export type { JournalEntry } from './journal/journal-entry.js';
/** Agents (docs/agents.md): the runtime behind ctx.agent, models, prices, budgets, provenance. */
export { createAgentRuntime, type AgentRuntimeOptions, type WaymarkAgentRuntime } from './agent/agent-runtime.js';
export { scriptedModel, type ScriptedTurn } from './agent/scripted-model.js';
export { streamingModel } from './agent/streaming-model.js';
export { DEFAULT_PRICES, PRICES_READ_ON, type ModelPrice } from './agent/prices.js';
export { runSpend, type RunSpend } from './engine/read/spend.js';
export { runProvenance, type AgentProvenance, type RunProvenance } from './agent/provenance.js';
export { BudgetExceededError, ModelConfigError, ModelNotConfiguredError, ModelPriceMissingError, UnknownModelError } from './agent/agent-errors.js';
export { AgentRuntimeMissingError } from './engine/errors.js';
export type {
  AgentMessage, AgentOptions, AgentResult, AgentRuntime, AgentToolCall, ToolDenial,
} from './engine/author/agent-contract.js';
