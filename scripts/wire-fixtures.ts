// Writes the shared wire fixtures in test/wire/ (`npm run wire:fixtures`), or with --check fails
// when they are stale. Each fixture is one message in the proto3 JSON mapping plus its binary
// encoding (base64); the Go, Python and TypeScript clients' tests decode both and compare, and
// re-encode, so the three clients and the server agree on the bytes.
//
// Binary encodings must be byte-identical across languages. Every map (labels, Struct fields) is
// written with its keys sorted, which is the order Go and Python use when serializing
// deterministically; protobuf-es keeps insertion order, so it produces the same bytes.
import { createRegistry, fromJson, toBinary, toJson, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import { file_google_protobuf_any, file_google_protobuf_duration } from '@bufbuild/protobuf/wkt';
import { readFileSync, readdirSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { file_google_rpc_error_details } from '../src/gen/google/rpc/error_details_pb.js';
import { file_google_rpc_status } from '../src/gen/google/rpc/status_pb.js';
import { file_waymark_v1_run } from '../src/gen/waymark/v1/run_pb.js';
import { file_waymark_v1_run_service } from '../src/gen/waymark/v1/run_service_pb.js';
import { file_waymark_v1_signal_service } from '../src/gen/waymark/v1/signal_service_pb.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'test', 'wire');

const registry = createRegistry(
  file_google_protobuf_any,
  file_google_protobuf_duration,
  file_google_rpc_status,
  file_google_rpc_error_details,
  file_waymark_v1_run,
  file_waymark_v1_run_service,
  file_waymark_v1_signal_service,
);

const RUN_ID = 'run_01JD8Z6Q4W8K7M2N3P5R6S7T8V';
const APPROVAL_ID = `${RUN_ID}:1`;
const T0 = '2026-11-29T10:00:00Z';
const T1 = '2026-11-29T10:00:01.250Z';
const T2 = '2026-11-29T10:05:00Z';
const DOMAIN = 'waymark'; // ERROR_DOMAIN in src/server/errors/error-mapping.ts
const refundInput = { amount: 42.5, order: 'A-1001' };

const parkedRun = {
  id: RUN_ID,
  namespace: 'default',
  workflowName: 'refund',
  workflowVersion: '1',
  workflowDigest: 'sha256:5f1e0c2a',
  status: 'RUN_STATUS_SUSPENDED',
  input: refundInput,
  labels: { team: 'payments' },
  idempotencyKey: 'refund-A-1001',
  budgetUsd: 2.5,
  createTime: T0,
  updateTime: T1,
  nextSeq: '2',
};

/** name -> [fully-qualified message type, proto3 JSON]. Keys of every JSON object sorted. */
const FIXTURES: Record<string, [string, JsonValue]> = {
  start_run_request: [
    'waymark.v1.StartRunRequest',
    { workflow: 'refund', input: refundInput, idempotencyKey: 'refund-A-1001', wait: true, budgetUsd: 2.5, labels: { team: 'payments' } },
  ],
  start_run_response: [
    'waymark.v1.StartRunResponse',
    { run: parkedRun, created: true, waitingOn: [{ kind: 'approval', name: 'Refund $42.5?', seq: '1', approvalId: APPROVAL_ID, deadline: '2026-11-30T10:00:00Z' }] },
  ],
  get_run_request: ['waymark.v1.GetRunRequest', { namespace: 'default', runId: RUN_ID }],
  list_runs_request: ['waymark.v1.ListRunsRequest', { statuses: ['RUN_STATUS_SUSPENDED', 'RUN_STATUS_FAILED'], workflow: 'refund', pageSize: 2, pageToken: 'eyJvIjoyfQ' }],
  list_runs_response: [
    'waymark.v1.ListRunsResponse',
    {
      runs: [
        {
          id: 'run_01JD8Z6Q4W8K7M2N3P5R6S7T8W',
          namespace: 'default',
          workflowName: 'refund',
          workflowVersion: '1',
          workflowDigest: 'sha256:5f1e0c2a',
          status: 'RUN_STATUS_SUCCEEDED',
          input: { amount: 10, order: 'A-0999' },
          output: { chargedBack: true, refundId: 'rf_77' },
          spentUsd: 0.0125,
          createTime: T0,
          updateTime: T2,
          nextSeq: '7',
        },
        {
          id: 'run_01JD8Z6Q4W8K7M2N3P5R6S7T8X',
          namespace: 'default',
          workflowName: 'refund',
          workflowVersion: '1',
          workflowDigest: 'sha256:5f1e0c2a',
          status: 'RUN_STATUS_FAILED',
          input: { amount: -1, order: 'A-0998' },
          error: { name: 'EffectFailedError', message: 'tool "charge_back" failed with Error: card expired', reason: 'effect_failed', details: { attempts: 3, retryable: false } },
          createTime: T0,
          updateTime: T2,
          nextSeq: '4',
        },
      ],
      nextPageToken: 'eyJvIjo0fQ',
    },
  ],
  get_journal_request: ['waymark.v1.GetJournalRequest', { runId: RUN_ID, afterSeq: '-1', pageSize: 100 }],
  get_journal_response: [
    'waymark.v1.GetJournalResponse',
    {
      entries: [
        {
          runId: RUN_ID,
          seq: '0',
          kind: 'status',
          status: 'ENTRY_STATUS_INFO',
          payload: { status: 'running' },
          createTime: T0,
        },
        {
          runId: RUN_ID,
          seq: '1',
          kind: 'approval',
          name: 'Refund $42.5?',
          contentKey: 'c0ffee01',
          status: 'ENTRY_STATUS_SUSPENDED',
          payload: { deadline: '24h', onTimeout: 'deny', title: 'Refund $42.5?' },
          createTime: T1,
        },
        {
          runId: RUN_ID,
          seq: '4',
          scope: 'par:3:1',
          kind: 'model',
          name: 'gpt-5-mini',
          contentKey: 'c0ffee04',
          occurrence: 2,
          status: 'ENTRY_STATUS_OK',
          payload: { text: 'ok' },
          refSeq: '3',
          usage: { inputTokens: '1200', outputTokens: '80', totalTokens: '1280' },
          costUsd: 0.00042,
          createTime: T2,
        },
      ],
      nextPageToken: '',
    },
  ],
  stream_run_events_request: ['waymark.v1.StreamRunEventsRequest', { runId: RUN_ID, afterSeq: '3', followSuspended: true }],
  stream_run_events_response_entry: [
    'waymark.v1.StreamRunEventsResponse',
    {
      event: {
        runId: RUN_ID,
        seq: '5',
        createTime: T2,
        entry: {
          runId: RUN_ID,
          seq: '5',
          kind: 'tool',
          name: 'charge_back',
          contentKey: 'c0ffee05',
          status: 'ENTRY_STATUS_OK',
          payload: { chargedBack: true, refundId: 'rf_78' },
          refSeq: '4',
          idempotencyKey: `${RUN_ID}/tool/c0ffee05/0`,
          createTime: T2,
        },
      },
    },
  ],
  stream_run_events_response_status: [
    'waymark.v1.StreamRunEventsResponse',
    { event: { runId: RUN_ID, seq: '6', createTime: T2, statusChanged: { status: 'RUN_STATUS_SUCCEEDED', output: { chargedBack: true, refundId: 'rf_78' } } } },
  ],
  resume_run_request: ['waymark.v1.ResumeRunRequest', { runId: RUN_ID, dryRun: true, invalidate: ['4', '5'], driftRecovery: 'DRIFT_RECOVERY_RESTART' }],
  resume_run_response: [
    'waymark.v1.ResumeRunResponse',
    {
      run: parkedRun,
      preview: {
        hits: 2,
        misses: 1,
        reruns: 1,
        items: [
          { outcome: 'RESUME_OUTCOME_HIT', seq: '1', kind: 'approval', name: 'Refund $42.5?' },
          { outcome: 'RESUME_OUTCOME_RERUN', seq: '4', kind: 'tool', name: 'charge_back', detail: 'invalidated' },
          { outcome: 'RESUME_OUTCOME_MISS', kind: 'tool', name: 'notify' },
        ],
      },
    },
  ],
  cancel_run_request: ['waymark.v1.CancelRunRequest', { runId: RUN_ID, reason: 'customer withdrew the request' }],
  send_signal_request: ['waymark.v1.SendSignalRequest', { runId: RUN_ID, name: 'receipt', payload: { ok: true, pages: [1, 2, null] }, signalId: 'sig-1' }],
  send_signal_response: ['waymark.v1.SendSignalResponse', { reason: 'already_resolved', seq: '9' }],
  send_signal_response_buffered: ['waymark.v1.SendSignalResponse', { buffered: true }],
  list_approvals_request: ['waymark.v1.ListApprovalsRequest', { workflow: 'refund', states: ['APPROVAL_STATE_PENDING'], pageSize: 10 }],
  decide_approval_request: [
    'waymark.v1.DecideApprovalRequest',
    { id: APPROVAL_ID, approve: true, by: 'ana@example.com', comment: 'within policy', requestId: 'req-1', payload: { note: 'ok' } },
  ],
  decide_approval_response: [
    'waymark.v1.DecideApprovalResponse',
    {
      approval: {
        id: APPROVAL_ID,
        runId: RUN_ID,
        seq: '1',
        workflowName: 'refund',
        title: 'Refund $42.5?',
        state: 'APPROVAL_STATE_APPROVED',
        decidedBy: 'ana@example.com',
        comment: 'within policy',
        decideTime: T2,
        deadline: '2026-11-30T10:00:00Z',
        onTimeout: 'APPROVAL_DECISION_DENY',
        labels: { team: 'payments' },
        createTime: T1,
      },
      applied: true,
    },
  ],
  list_workflows_response: [
    'waymark.v1.ListWorkflowsResponse',
    {
      workflows: [
        {
          name: 'refund',
          version: '1',
          digest: 'sha256:5f1e0c2a',
          description: 'Refunds an order after a person approves it.',
          inputSchema: { properties: { amount: { type: 'number' }, order: { type: 'string' } }, required: ['order', 'amount'], type: 'object' },
          driftPolicy: 'DRIFT_POLICY_WARN',
        },
      ],
    },
  ],
  // The google.rpc.Status a failed call carries in its grpc-status-details-bin trailer.
  error_run_not_found: [
    'google.rpc.Status',
    {
      code: 5,
      message: `run ${RUN_ID} was not found in this namespace; check the id and the namespace it was started in`,
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: DOMAIN, metadata: { run_id: RUN_ID }, reason: 'RUN_NOT_FOUND' }],
    },
  ],
  error_invalid_input: [
    'google.rpc.Status',
    {
      code: 3,
      message: 'input of workflow "refund" is invalid: amount: expected number; fix the payload to match the schema',
      details: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: DOMAIN, reason: 'INVALID_INPUT' },
        {
          '@type': 'type.googleapis.com/google.rpc.BadRequest',
          fieldViolations: [
            { description: 'expected number, received string', field: 'input.amount' },
            { description: 'required', field: 'input.order' },
          ],
        },
      ],
    },
  ],
  error_flow_drift: [
    'google.rpc.Status',
    {
      code: 9,
      message: 'run was started with another definition of workflow "refund"',
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          domain: DOMAIN,
          metadata: { choices: 'restart,abandon', current_digest: 'sha256:9a9a', pinned_digest: 'sha256:5f1e0c2a', run_id: RUN_ID, workflow: 'refund' },
          reason: 'FLOW_DRIFT',
        },
      ],
    },
  ],
  error_lease_lost: [
    'google.rpc.Status',
    {
      code: 10,
      message: `lease on run ${RUN_ID} at epoch 3 was taken over by another worker; this worker stops executing it`,
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: DOMAIN, metadata: { epoch: '3', run_id: RUN_ID }, reason: 'LEASE_LOST' }],
    },
  ],
  error_payload_too_large: [
    'google.rpc.Status',
    {
      code: 8,
      message: 'input is 2097152 bytes, over the limit of 1048576 bytes; send a smaller payload or raise the limit',
      details: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: DOMAIN, metadata: { field: 'input', limit: 'WAYMARK_MAX_PAYLOAD_BYTES', limit_bytes: '1048576', size_bytes: '2097152' }, reason: 'PAYLOAD_TOO_LARGE' },
      ],
    },
  ],
};

function schemaOf(typeName: string): DescMessage {
  const desc = registry.getMessage(typeName);
  if (!desc) throw new Error(`wire-fixtures: unknown message type ${typeName}`);
  return desc;
}

/** Serialized fixture files, by file name. */
function render(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, [type, json]] of Object.entries(FIXTURES)) {
    const schema = schemaOf(type);
    const message = fromJson(schema, json, { registry });
    const binary = toBinary(schema, message);
    // Store the JSON as protobuf-es prints it, so "decode, then print" is an exact comparison.
    const canonical = toJson(schema, message, { registry });
    const body = { type, json: canonical, binary: Buffer.from(binary).toString('base64') };
    files.set(`${name}.json`, `${JSON.stringify(body, null, 2)}\n`);
  }
  return files;
}

const check = process.argv.includes('--check');
const files = render();
if (check) {
  const current = readdirSync(dir).filter((f) => f.endsWith('.json'));
  const stale = [...files].filter(([name, text]) => !current.includes(name) || readFileSync(path.join(dir, name), 'utf8') !== text).map(([n]) => n);
  const extra = current.filter((name) => !files.has(name));
  if (stale.length || extra.length) {
    console.error(`wire-fixtures --check: stale ${[...stale, ...extra].join(', ')}; run \`npm run wire:fixtures\``);
    process.exit(1);
  }
  console.log(`wire-fixtures --check: ${files.size} fixtures up to date`);
} else {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.json'))) rmSync(path.join(dir, name));
  for (const [name, text] of files) writeFileSync(path.join(dir, name), text);
  console.log(`wire-fixtures: wrote ${files.size} fixtures to ${path.relative(root, dir)}/`);
}
