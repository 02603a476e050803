import type { Scope } from '../../engine/index.js';

/*
 * What each RPC needs (docs/security.md "Scopes"): the one table the auth interceptor
 * (server/auth/auth.ts) reads. test/server/access-rules.test.ts checks that it names every method of
 * every service the server registers, from the generated descriptors, and nothing else, so a new
 * RPC cannot be served before someone decides who may call it (a method missing here is refused).
 *
 * - `public`: no credentials (health checks: probes carry none).
 * - `reflection`: a valid key of any scope, or none when WAYMARK_REFLECTION_PUBLIC is true.
 * - `{ scope }`: a key carrying the scope (`admin` is only ever granted to admin keys, so a rule
 *   of scope `admin` without `admin: true` is an admin key addressing the request's namespace).
 *   `streamToken`: a stream token for the run the request
 *   names is accepted instead. `admin`: the key must also be an admin key (no namespace), and the
 *   request's `namespace` field is data (the key's namespace, a filter), not the caller's namespace.
 */

export type AccessRule =
  | 'public'
  | 'reflection'
  | { scope: Scope; streamToken?: true; admin?: true };

export const ACCESS_RULES: Readonly<Record<string, AccessRule>> = {
  'waymark.v1.RunService/StartRun': { scope: 'runs:write' },
  'waymark.v1.RunService/GetRun': { scope: 'runs:read', streamToken: true },
  'waymark.v1.RunService/ListRuns': { scope: 'runs:read' },
  'waymark.v1.RunService/GetJournal': { scope: 'runs:read' },
  'waymark.v1.RunService/StreamRunEvents': { scope: 'runs:read', streamToken: true },
  'waymark.v1.RunService/ResumeRun': { scope: 'runs:write' },
  'waymark.v1.RunService/CancelRun': { scope: 'runs:write' },
  'waymark.v1.RunService/ListWorkflows': { scope: 'runs:read' },
  'waymark.v1.RunService/GetRunProvenance': { scope: 'runs:read' },
  'waymark.v1.RunService/CreateStreamToken': { scope: 'runs:read' },
  // A fork is a new run: starting one is a write, as StartRun is.
  'waymark.v1.RunService/ForkRun': { scope: 'runs:write' },
  'waymark.v1.RunService/CompareRuns': { scope: 'runs:read' },
  // Deleting runs and their journals is an admin's act in its namespace, as retention's settings are.
  'waymark.v1.RunService/PurgeRuns': { scope: 'admin' },
  // A flow can call any registered tool with any arguments (http included): registering one is an
  // admin's act in its namespace, as deploying code is; reading flows is run data.
  'waymark.v1.FlowService/RegisterFlow': { scope: 'admin' },
  'waymark.v1.FlowService/GetFlow': { scope: 'runs:read' },
  'waymark.v1.FlowService/ListFlows': { scope: 'runs:read' },
  // An MCP server's tools run with the namespace's runs: registering one is an admin's act, as a flow is.
  'waymark.v1.McpService/PutMcpServer': { scope: 'admin' },
  'waymark.v1.McpService/ListMcpServers': { scope: 'runs:read' },
  'waymark.v1.McpService/RemoveMcpServer': { scope: 'admin' },
  // A schedule starts runs of the namespace's workflows, as StartRun does: changing one is a run write.
  'waymark.v1.ScheduleService/CreateSchedule': { scope: 'runs:write' },
  'waymark.v1.ScheduleService/GetSchedule': { scope: 'runs:read' },
  'waymark.v1.ScheduleService/ListSchedules': { scope: 'runs:read' },
  'waymark.v1.ScheduleService/UpdateSchedule': { scope: 'runs:write' },
  'waymark.v1.ScheduleService/PauseSchedule': { scope: 'runs:write' },
  'waymark.v1.ScheduleService/UnpauseSchedule': { scope: 'runs:write' },
  'waymark.v1.ScheduleService/TriggerSchedule': { scope: 'runs:write' },
  'waymark.v1.ScheduleService/BackfillSchedule': { scope: 'runs:write' },
  'waymark.v1.ScheduleService/DeleteSchedule': { scope: 'runs:write' },
  'waymark.v1.SignalService/SendSignal': { scope: 'signals:send' },
  // A worker sees the arguments of its namespace's remote calls and writes their results (docs/workers.md).
  'waymark.v1.WorkerService/RegisterWorker': { scope: 'tools:serve' },
  'waymark.v1.WorkerService/PollTask': { scope: 'tools:serve' },
  'waymark.v1.WorkerService/Heartbeat': { scope: 'tools:serve' },
  'waymark.v1.WorkerService/CompleteTask': { scope: 'tools:serve' },
  'waymark.v1.WorkerService/ListTools': { scope: 'runs:read' },
  'waymark.v1.SignalService/ListApprovals': { scope: 'runs:read' },
  'waymark.v1.SignalService/GetApproval': { scope: 'runs:read' },
  'waymark.v1.SignalService/DecideApproval': { scope: 'approvals:decide' },
  // Webhooks send run outputs to a URL of the caller's choosing, and an endpoint's URL may carry a
  // token: managing and listing endpoints takes an admin key; deliveries are run data.
  'waymark.v1.WebhookService/CreateWebhookEndpoint': { scope: 'admin' },
  'waymark.v1.WebhookService/ListWebhookEndpoints': { scope: 'admin' },
  'waymark.v1.WebhookService/DeleteWebhookEndpoint': { scope: 'admin' },
  'waymark.v1.WebhookService/RotateWebhookSecret': { scope: 'admin' },
  'waymark.v1.WebhookService/ListWebhookDeliveries': { scope: 'runs:read' },
  'waymark.v1.WebhookService/RedeliverWebhook': { scope: 'admin' },
  'waymark.v1.AdminService/CreateKey': { scope: 'admin', admin: true },
  'waymark.v1.AdminService/ListKeys': { scope: 'admin', admin: true },
  'waymark.v1.AdminService/RevokeKey': { scope: 'admin', admin: true },
  'grpc.health.v1.Health/Check': 'public',
  'grpc.health.v1.Health/List': 'public',
  'grpc.health.v1.Health/Watch': 'public',
  'grpc.reflection.v1.ServerReflection/ServerReflectionInfo': 'reflection',
  'grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo': 'reflection',
};
