import type { DescMethod, DescService } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { Logger } from 'pino';
import {
  BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema, QuotaFailureSchema, ResourceInfoSchema, RetryInfoSchema,
} from '../../gen/google/rpc/error_details_pb.js';
import {
  ApiKeyNotFoundError, ClientCertificateTakenError, IdempotencyConflictError, JournalFullError, LeaseLostError, PayloadTooLargeError, RunNotFoundError, RunStateError,
  ScheduleExistsError, ScheduleNotFoundError, StoreUnavailableError, StreamTokensDisabledError, UnstorableValueError, unstorableReason, WaymarkError, WorkflowNotFoundError,
} from '../../journal/errors.js';
import { ApprovalNotFoundError, FlowDriftError, FlowNameTakenError, FlowNotFoundError, InvalidDeclarationError, InvalidFlowError, InvalidForkError, InvalidateTargetError, RunsNotComparableError, InvalidInputError, InvalidResolutionError, JournalCorruptError, McpServerNotFoundError, NonDeterminismError, NotJsonError, ToolNotFoundError, type FieldViolation } from '../../engine/index.js';
import { InvalidPageTokenError } from '../../engine/index.js';
import { InvalidRequestError } from '../convert/request-validation.js';
import { INTERNAL_MESSAGE, markAnswered } from './server-faults.js';
import { StreamLimitError } from './stream-limit-error.js';
import { WebhookDeliveryNotFoundError, WebhookDeliveryPendingError, WebhookEndpointNotFoundError } from '../../journal/webhook-errors.js';
import { TaskLostError, WorkerNotFoundError } from '../../journal/worker-errors.js';

/*
 * The one place domain errors become gRPC statuses (STYLE habit 4; docs/api.md "Errors" is the
 * table). Every error carries google.rpc.ErrorInfo with the domain error's stable `reason`, plus
 * the detail a client acts on: BadRequest field violations for INVALID_ARGUMENT, ResourceInfo for
 * NOT_FOUND, PreconditionFailure for FAILED_PRECONDITION, QuotaFailure for limits, RetryInfo where
 * a retry can succeed. Messages are the domain errors' own, written to say what to do. Anything
 * else is a bug: answered INTERNAL without internals, and logged once with its cause (server-faults.ts).
 */

export const ERROR_DOMAIN = 'waymark';

type Detail = NonNullable<ConstructorParameters<typeof ConnectError>[3]>[number];

/** A google.rpc.ErrorInfo of this server's domain (framework-errors.ts uses it too). */
export const info = (reason: string, metadata: Record<string, string | number | undefined> = {}): Detail => ({
  desc: ErrorInfoSchema,
  value: {
    reason, domain: ERROR_DOMAIN,
    metadata: Object.fromEntries(Object.entries(metadata).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)])),
  },
});
const badRequest = (violations: FieldViolation[], prefix = ''): Detail => ({
  desc: BadRequestSchema,
  value: {
    fieldViolations: violations.map((v) => ({
      field: prefix && v.field ? `${prefix}.${v.field}` : prefix || v.field, description: v.description,
    })),
  },
});
const resource = (type: string, name: string, description: string): Detail => ({
  desc: ResourceInfoSchema, value: { resourceType: type, resourceName: name, description },
});
const precondition = (type: string, subject: string, description: string): Detail => ({
  desc: PreconditionFailureSchema, value: { violations: [{ type, subject, description }] },
});
const quota = (subject: string, description: string): Detail => ({
  desc: QuotaFailureSchema, value: { violations: [{ subject, description }] },
});
const retryAfter = (ms: number): Detail => ({ desc: RetryInfoSchema, value: { retryDelay: durationFromMs(ms) } });

/*
 * What an error may echo of the request is bounded: a status travels in HTTP/2 trailers, whose
 * header block Node refuses past 64 KiB (the stream is then reset with FRAME_SIZE_ERROR and the
 * client gets no status at all; found by the full fuzz run: 64 labels with keys of a few KiB each,
 * every one named in the message and in a field violation). So a message is at most
 * MAX_MESSAGE_CHARS characters, a BadRequest lists at most MAX_VIOLATIONS violations, each field
 * path and description and each metadata value is cut to its bound, and a lone surrogate (which
 * the grpc-message percent-encoding cannot carry) becomes U+FFFD. Worst case, four UTF-8 bytes a
 * character, about 40 KiB on the wire. Pinned by test/server/hostile-input.test.ts.
 */
export const MAX_MESSAGE_CHARS = 1_024;
const MAX_VIOLATIONS = 16;
const MAX_FIELD_CHARS = 160;
const MAX_DESCRIPTION_CHARS = 320;
const MAX_METADATA_CHARS = 256;

/** `text` cut to `max` code points, saying how much was left out; lone surrogates replaced. */
export function boundedText(text: string, max: number): string {
  const wellFormed = text.replace(/\p{Cs}/gu, '\uFFFD');
  if (wellFormed.length <= max) return wellFormed;
  const points = Array.from(wellFormed);
  if (points.length <= max) return wellFormed;
  return `${points.slice(0, max).join('')}… (${points.length - max} more characters)`;
}

/** `details` with every client-sized part cut to its bound (see above). */
export function boundedDetails(details: Detail[]): Detail[] {
  return details.map((d) => {
    if (!('desc' in d)) return d;
    if (d.desc === BadRequestSchema) {
      const value = d.value as { fieldViolations?: FieldViolation[] };
      const all = value.fieldViolations ?? [];
      const kept = all.slice(0, MAX_VIOLATIONS).map((v) => ({
        field: boundedText(v.field ?? '', MAX_FIELD_CHARS), description: boundedText(v.description ?? '', MAX_DESCRIPTION_CHARS),
      }));
      if (all.length > MAX_VIOLATIONS) kept.push({ field: '', description: `and ${all.length - MAX_VIOLATIONS} more violations` });
      return { desc: BadRequestSchema, value: { fieldViolations: kept } };
    }
    if (d.desc === ErrorInfoSchema) {
      const value = d.value as { reason?: string; domain?: string; metadata?: Record<string, string> };
      const metadata = Object.fromEntries(Object.entries(value.metadata ?? {}).map(([k, v]) => [k, boundedText(v, MAX_METADATA_CHARS)]));
      return { desc: ErrorInfoSchema, value: { ...value, metadata } };
    }
    return d;
  }) as Detail[];
}

/** A status whose message and details are within the bounds above, whatever the request echoed. */
export function status(message: string, code: Code, details: Detail[]): ConnectError {
  return new ConnectError(boundedText(message, MAX_MESSAGE_CHARS), code, undefined, boundedDetails(details));
}

/** The gRPC status of a domain error; undefined for an error this file does not know. */
export function domainStatus(err: WaymarkError): ConnectError | undefined {
  const m = err.message;
  if (err instanceof InvalidRequestError || err instanceof InvalidPageTokenError || err instanceof InvalidDeclarationError) {
    return status(m, Code.InvalidArgument, [badRequest(err.violations), info(err.reason)]);
  }
  if (err instanceof InvalidInputError) return status(m, Code.InvalidArgument, [badRequest(err.violations, 'input'), info(err.reason)]);
  if (err instanceof InvalidFlowError) return status(m, Code.InvalidArgument, [badRequest(err.violations), info(err.reason, { flow: err.flowName })]);
  if (err instanceof FlowNameTakenError) {
    return status(m, Code.AlreadyExists, [info(err.reason, { flow: err.flowName }), badRequest([{ field: 'flow.name', description: 'a code workflow has this name' }])]);
  }
  if (err instanceof McpServerNotFoundError) {
    return status(m, Code.NotFound, [info(err.reason, { server: err.server }), resource('waymark.v1.McpServer', err.server, 'no such MCP server in this namespace')]);
  }
  if (err instanceof ScheduleNotFoundError) {
    return status(m, Code.NotFound, [info(err.reason, { schedule_id: err.scheduleId }), resource('waymark.v1.Schedule', err.scheduleId, 'no such schedule in this namespace')]);
  }
  if (err instanceof ScheduleExistsError) {
    return status(m, Code.AlreadyExists, [info(err.reason, { schedule_id: err.scheduleId }), resource('waymark.v1.Schedule', err.scheduleId, 'a schedule of this id exists in this namespace')]);
  }
  if (err instanceof FlowNotFoundError) {
    return status(m, Code.NotFound, [
      info(err.reason, { flow: err.flowName, ...(err.version !== null ? { version: String(err.version) } : {}) }),
      resource('waymark.v1.Flow', err.version === null ? err.flowName : `${err.flowName}@${err.version}`, 'no such flow (version) in this namespace'),
    ]);
  }
  if (err instanceof InvalidResolutionError) {
    return status(m, Code.InvalidArgument, [badRequest(err.violations, 'payload'), info(err.reason, { run_id: err.runId, seq: err.seq })]);
  }
  if (err instanceof RunsNotComparableError) {
    return status(m, Code.InvalidArgument, [badRequest([{ field: 'run_id_b', description: err.detail }]), info(err.reason, { run_id_a: err.runIdA, run_id_b: err.runIdB })]);
  }
  if (err instanceof InvalidForkError) {
    return status(m, Code.InvalidArgument, [badRequest([{ field: err.field, description: err.detail }]), info(err.reason, { run_id: err.runId })]);
  }
  if (err instanceof InvalidateTargetError) {
    return status(m, Code.InvalidArgument, [badRequest([{ field: 'invalidate', description: m }]), info(err.reason, { run_id: err.runId, seq: err.seq })]);
  }
  if (err instanceof UnstorableValueError) return status(m, Code.InvalidArgument, [badRequest([{ field: err.field, description: m }]), info(err.reason)]);
  if (err instanceof NotJsonError) return status(m, Code.InvalidArgument, [info(err.reason)]);
  if (err instanceof RunNotFoundError) {
    return status(m, Code.NotFound, [info(err.reason, { run_id: err.runId }), resource('waymark.v1.Run', err.runId, 'no such run in this namespace')]);
  }
  if (err instanceof WorkflowNotFoundError) {
    return status(m, Code.NotFound, [
      info(err.reason, { workflow: err.workflowName }), resource('waymark.v1.Workflow', err.workflowName, 'not registered on this server'),
      badRequest([{ field: 'workflow', description: 'not registered on this server; ListWorkflows shows the registered ones' }]),
    ]);
  }
  if (err instanceof ApprovalNotFoundError) {
    return status(m, Code.NotFound, [info(err.reason, { approval_id: err.approvalId }), resource('waymark.v1.Approval', err.approvalId, 'no such approval in this namespace')]);
  }
  if (err instanceof WebhookEndpointNotFoundError) {
    return status(m, Code.NotFound, [info(err.reason, { endpoint_id: err.endpointId }), resource('waymark.v1.WebhookEndpoint', err.endpointId, 'no such endpoint in this namespace')]);
  }
  if (err instanceof WebhookDeliveryNotFoundError) {
    return status(m, Code.NotFound, [info(err.reason, { delivery_id: err.deliveryId }), resource('waymark.v1.WebhookDelivery', err.deliveryId, 'no such delivery in this namespace')]);
  }
  if (err instanceof WebhookDeliveryPendingError) {
    return status(m, Code.FailedPrecondition, [
      info(err.reason, { delivery_id: err.deliveryId }),
      precondition('WRONG_STATE', `webhookDeliveries/${err.deliveryId}`, 'the delivery is pending; redeliver a delivered or dead-lettered one'),
    ]);
  }
  if (err instanceof ApiKeyNotFoundError) {
    return status(m, Code.NotFound, [info(err.reason, { key_id: err.keyId }), resource('waymark.v1.ApiKey', err.keyId, 'no such API key')]);
  }
  if (err instanceof ClientCertificateTakenError) {
    return status(m, Code.AlreadyExists, [info(err.reason, { fingerprint_sha256: err.fingerprint })]);
  }
  if (err instanceof StreamTokensDisabledError) {
    return status(m, Code.FailedPrecondition, [info(err.reason), precondition('STREAM_TOKENS_DISABLED', 'server', 'set WAYMARK_STREAM_TOKEN_SECRET on every replica')]);
  }
  if (err instanceof ToolNotFoundError) return status(m, Code.NotFound, [info(err.reason, { tool: err.toolName })]);
  if (err instanceof WorkerNotFoundError) {
    return status(m, Code.NotFound, [info(err.reason, { worker_id: err.workerId }), resource('waymark.v1.Worker', err.workerId, 'register the worker again')]);
  }
  if (err instanceof TaskLostError) return status(m, Code.Aborted, [info(err.reason, { task_id: err.taskId, fencing_token: err.fencingToken })]);
  if (err instanceof FlowDriftError) {
    return status(m, Code.FailedPrecondition, [
      info(err.reason, {
        run_id: err.runId, workflow: err.workflowName, pinned_digest: err.pinnedDigest, current_digest: err.currentDigest,
        choices: err.choices.join(','),
      }),
      precondition('FLOW_DRIFT', `runs/${err.runId}`, 'resume with drift_recovery RESTART or ABANDON, or deploy the pinned definition'),
    ]);
  }
  if (err instanceof RunStateError) {
    return status(m, Code.FailedPrecondition, [
      info(err.reason, { run_id: err.runId, status: err.status, wanted: err.wanted }),
      precondition('WRONG_STATE', `runs/${err.runId}`, `the run is ${err.status}; it must be ${err.wanted}`),
    ]);
  }
  if (err instanceof NonDeterminismError || err instanceof JournalCorruptError) {
    return status(m, Code.FailedPrecondition, [info(err.reason, { run_id: err.runId })]);
  }
  if (err instanceof IdempotencyConflictError) {
    return status(m, Code.AlreadyExists, [info(err.reason, { idempotency_key: err.idempotencyKey, existing_run_id: err.existingRunId })]);
  }
  if (err instanceof LeaseLostError) return status(m, Code.Aborted, [info(err.reason, { run_id: err.runId, epoch: err.epoch })]);
  if (err instanceof PayloadTooLargeError) {
    return status(m, Code.ResourceExhausted, [
      info(err.reason, { field: err.field, size_bytes: err.sizeBytes, limit_bytes: err.limitBytes, limit: 'WAYMARK_MAX_PAYLOAD_BYTES' }),
      quota(err.field, `a JSON payload may be at most ${err.limitBytes} bytes (WAYMARK_MAX_PAYLOAD_BYTES); this one is ${err.sizeBytes}`),
      badRequest([{ field: err.field, description: `over the payload limit of ${err.limitBytes} bytes` }]),
    ]);
  }
  if (err instanceof JournalFullError && err.limitBytes !== null) {
    return status(m, Code.ResourceExhausted, [
      info(err.reason, { run_id: err.runId, limit_bytes: err.limitBytes, limit: 'WAYMARK_MAX_JOURNAL_BYTES' }),
      quota(`runs/${err.runId}`, `a journal may hold at most ${err.limitBytes} bytes of payloads (WAYMARK_MAX_JOURNAL_BYTES)`),
    ]);
  }
  if (err instanceof JournalFullError) {
    return status(m, Code.ResourceExhausted, [
      info(err.reason, { run_id: err.runId, limit_entries: err.limitEntries, limit: 'WAYMARK_MAX_JOURNAL_ENTRIES' }),
      quota(`runs/${err.runId}`, `a journal may hold at most ${err.limitEntries} entries (WAYMARK_MAX_JOURNAL_ENTRIES)`),
    ]);
  }
  if (err instanceof StreamLimitError) {
    return status(m, Code.ResourceExhausted, [
      info(err.reason, { limit_streams: err.limit, limit: 'WAYMARK_MAX_STREAMS' }),
      quota('streams', `a replica serves at most ${err.limit} event streams at once (WAYMARK_MAX_STREAMS)`),
      retryAfter(1_000),
    ]);
  }
  if (err instanceof StoreUnavailableError) {
    // The driver's text (hosts, SQLSTATEs) stays in the log; the client learns to retry.
    return status('the journal store is unavailable; retry with backoff', Code.Unavailable, [info(err.reason), retryAfter(1_000)]);
  }
  return undefined;
}

/**
 * What the client gets for a server fault (server-faults.ts): `code` with reason INTERNAL and a
 * message without internals. `cause` rides along for the one log line the logging interceptor writes.
 */
export function internalError(cause: unknown, code: Code = Code.Internal): ConnectError {
  return markAnswered(new ConnectError(INTERNAL_MESSAGE, code, undefined, [info('INTERNAL')], cause));
}

/**
 * The ConnectError a handler throws for `err`: ConnectErrors pass, domain errors map, the rest is a
 * bug: INTERNAL, carrying `err` as its cause, which the logging interceptor logs with the call.
 */
export function toConnectError(err: unknown, logger: Logger): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof WaymarkError) {
    const mapped = domainStatus(err);
    if (mapped) {
      if (err instanceof StoreUnavailableError) logger.warn({ err }, 'journal store unavailable during an RPC');
      return mapped;
    }
  }
  return internalError(err);
}

/** The text protobuf-es' JSON decoder uses, and what it names: a field, an enum type, or an unknown key. */
const JSON_FIELD = /cannot decode field ([\w.]+) from JSON/;
const JSON_ENUM = /cannot decode enum ([\w.]+) from JSON: (.*)$/;
const JSON_KEY = /cannot decode message [\w.]+ from JSON: key "([^"]*)" is unknown/;
const MAP_ENTRY = /from JSON: map entry "([^"]*)"/;

/** Which request field a protobuf-es JSON decode error is about, in proto (snake_case) names; '' when it names none. */
function decodeErrorField(text: string, method: DescMethod): { field: string; description: string } {
  const key = JSON_KEY.exec(text);
  if (key) return { field: key[1]!, description: `is not a field of ${method.input.typeName}; check the spelling (proto or JSON field names)` };
  const field = JSON_FIELD.exec(text);
  if (field) {
    const name = field[1]!.slice(field[1]!.lastIndexOf('.') + 1);
    const entry = MAP_ENTRY.exec(text);
    return { field: entry ? `${name}[${entry[1]}]` : name, description: `does not decode: ${text.slice(text.indexOf(' from JSON: ') + 12) || text}` };
  }
  const enumType = JSON_ENUM.exec(text);
  if (enumType) {
    const owner = method.input.fields.find((f) => f.enum?.typeName === enumType[1]);
    const known = owner?.enum?.values.map((v) => v.name).join(', ');
    return { field: owner?.name ?? '', description: `unknown value ${enumType[2]}${known ? `; one of ${known}` : ''}` };
  }
  return { field: '', description: text };
}

/**
 * The INVALID_ARGUMENT for a request body that does not decode, or undefined for any other error:
 * reason MALFORMED_REQUEST (docs/api.md "Errors"), with a BadRequest naming the field when the
 * decoder names one (an unknown enum name or field over Connect JSON, a wrong type). Connect
 * answers INTERNAL for a binary body that does not decode (a bad varint, invalid UTF-8, nesting
 * past the decoder's limit); that is the client's mistake too. framework-errors.ts (withErrorInfo)
 * sends every error Connect raises around a handler here; the logging interceptor too, which sees
 * a server stream's request decoded inside the interceptor chain, before it would hide an INTERNAL.
 */
export function decodeErrorStatus(err: ConnectError, method: DescMethod): ConnectError | undefined {
  const text = err.rawMessage;
  if (err.code === Code.Internal && text.startsWith('parse binary: ')) {
    const why = text.slice('parse binary: '.length);
    return status(`the request is not a valid ${method.input.typeName} (protobuf binary): ${why}; fix the client's encoding`, Code.InvalidArgument, [
      info('MALFORMED_REQUEST', { message_type: method.input.typeName }),
    ]);
  }
  if (err.code === Code.Internal && text.startsWith('received compressed envelope')) {
    // A gRPC frame flagged compressed in a request without a grpc-encoding we accept: the client's framing.
    return status('a message is flagged compressed but the request names no grpc-encoding this server accepts (gzip, br); clear the flag or set grpc-encoding', Code.InvalidArgument, [
      info('MALFORMED_REQUEST', { message_type: method.input.typeName }),
    ]);
  }
  if (err.code === Code.InvalidArgument && (text.includes(' from JSON') || err.cause instanceof SyntaxError)) {
    const violation = decodeErrorField(text, method);
    const message = violation.field ? `the request is invalid: ${violation.field}: ${violation.description}` : `the request is not valid JSON for ${method.input.typeName}: ${text}`;
    // The text decoder turns bad UTF-8 bytes into U+FFFD, so in JSON only a lone surrogate escape is "invalid UTF8".
    const reason = text.endsWith('invalid UTF8') ? unstorableReason('surrogate') : 'MALFORMED_REQUEST';
    return status(message, Code.InvalidArgument, [...(violation.field ? [badRequest([violation])] : []), info(reason, { message_type: method.input.typeName })]);
  }
  return undefined;
}

type AnyHandler = (req: unknown, ctx: HandlerContext) => unknown;

/**
 * Wraps every method of a service implementation so whatever it throws leaves as a gRPC status
 * with details, also when it is served in process (createRouterTransport in tests).
 */
export function withErrorMapping<S extends DescService>(service: S, impl: ServiceImpl<S>, logger: Logger): ServiceImpl<S> {
  const wrapped: Record<string, AnyHandler> = {};
  for (const method of service.methods) {
    const handler = (impl as unknown as Record<string, AnyHandler>)[method.localName]!;
    wrapped[method.localName] = method.methodKind === 'server_streaming'
      ? async function* (req, ctx) {
        try {
          yield* handler(req, ctx) as AsyncIterable<unknown>;
        } catch (err) {
          throw toConnectError(err, logger);
        }
      }
      : async (req, ctx) => {
        try {
          return await handler(req, ctx);
        } catch (err) {
          throw toConnectError(err, logger);
        }
      };
  }
  return wrapped as unknown as ServiceImpl<S>;
}
