/**
 * Waymark client for TypeScript (Node): start, follow, resume and approve durable AI-agent runs
 * over gRPC. `createWaymarkClient()` (or `connectWaymarkClient()`, which checks the server is
 * ready first) returns the client; the generated messages, enums and service descriptors are
 * re-exported for everything else, and Connect's `Code` for error codes.
 */
export { Code, ConnectError } from '@connectrpc/connect';
export type { JsonValue } from '@bufbuild/protobuf';
export { connectWaymarkClient, createWaymarkClient, DEFAULT_ADDRESS, fromValue, toValue, WaymarkClient } from './client.js';
export type {
  ApprovalFilter, CallOptions, ClientOptions, Decision, EventsOptions, JournalOptions, ForkOptions, PurgeOptions, ReadyOptions, ResultOptions, ResumeOptions, RunFilter, TokensOptions,
  SignalOptions, StartOptions, TlsOptions, TokenSource,
} from './options.js';
export type { DecisionResult, ForkResult, ResumeResult, RunState, StartRunResult } from './responses.js';
export type { ReconnectInfo } from './events.js';
export type { AttemptStarted, CallFinished, TokenEvent, TokenText } from './tokens.js';
export { DEFAULT_RETRY, type RetryPolicy } from './retry.js';
export {
  approvalStateName, entryStatusName, isTerminal, runStatusName, toApprovalState, toDriftRecovery, toRunStatus, toWaitFor,
  type ApprovalStateName, type DriftRecoveryName, type EntryStatusName, type RunStatusName, type WaitForName,
} from './names.js';
export {
  AlreadyResolved, ApprovalNotFound, FlowDrift, IdempotencyConflict, InvalidArgument, LeaseLost, PayloadTooLarge, RunNotFound,
  ScheduleExists, ScheduleNotFound, TaskLost, toWaymarkError, Unavailable, WaymarkError, WorkerNotFound, WorkflowNotFound, WrongState,
} from './errors.js';
export { overlapPolicyName, scheduleDefinition, toOverlapPolicy } from './schedules.js';
export type { OverlapPolicyName, ScheduleDefinition, ScheduleListOptions, ScheduleStartOptions } from './schedules.js';
export type { ErrorDetails, FieldViolation, UnavailableKind } from './errors.js';
export { RunCancelled, RunFailed } from './run-failed.js';
export { createWaymarkWorker, NonRetryableToolError, WaymarkWorker } from './worker.js';
export type { JsonSchema, SchemaLike, ToolContext, ToolOptions, WorkerOptions } from './worker.js';
export * from './gen/waymark/v1/run_pb.js';
export * from './gen/waymark/v1/run_service_pb.js';
export * from './gen/waymark/v1/signal_service_pb.js';
export * from './gen/waymark/v1/admin_service_pb.js';
export * from './gen/waymark/v1/worker_service_pb.js';
export * from './gen/waymark/v1/flow_service_pb.js';
export * from './gen/waymark/v1/mcp_service_pb.js';
export * from './gen/waymark/v1/schedule_service_pb.js';
