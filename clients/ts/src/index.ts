/**
 * Waymark client for TypeScript (Node): start, follow, resume and approve durable AI-agent runs
 * over gRPC. `createWaymarkClient()` returns the wrapper; the generated messages, enums and
 * service descriptors are re-exported for everything else.
 */
export { createWaymarkClient, DEFAULT_ADDRESS, fromValue, isTerminal, toValue, WaymarkClient } from './client.js';
export type { ApprovalFilter, Backoff, ClientOptions, Decision, EventsOptions, RunFilter, StartOptions } from './client.js';
export {
  AlreadyResolved, ApprovalNotFound, FlowDrift, IdempotencyConflict, InvalidArgument, LeaseLost, PayloadTooLarge, RunNotFound,
  toWaymarkError, Unavailable, WaymarkError, WorkflowNotFound, WrongState,
} from './errors.js';
export type { FieldViolation } from './errors.js';
export * from './gen/waymark/v1/run_pb.js';
export * from './gen/waymark/v1/run_service_pb.js';
export * from './gen/waymark/v1/signal_service_pb.js';
