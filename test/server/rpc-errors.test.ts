import { Code } from '@connectrpc/connect';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  ApprovalNotFoundError, FlowDriftError, InvalidateTargetError, InvalidInputError, InvalidResolutionError, JournalCorruptError,
  NonDeterminismError, NotJsonError, ToolNotFoundError,
} from '../../src/engine/errors.js';
import { ErrorInfoSchema, RetryInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import type { WaymarkError } from '../../src/journal/errors.js';
import {
  IdempotencyConflictError, JournalFullError, LeaseLostError, PayloadTooLargeError, RunNotFoundError, RunStateError,
  StoreUnavailableError, UnstorableValueError, WorkflowNotFoundError,
} from '../../src/journal/errors.js';
import { ERROR_DOMAIN, toConnectError } from '../../src/server/errors/error-mapping.js';
import { InvalidRequestError } from '../../src/server/convert/request-validation.js';
import { StreamLimitError } from '../../src/server/errors/stream-limit-error.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { apiHarness, detail, failure, json } from './api-harness.js';

const RUN = '018f0000-0000-7000-8000-000000000000';
const silent = pino({ enabled: false });

/** Every domain error the API can meet, with the code docs/api.md promises for it. */
const TABLE: [WaymarkError, Code][] = [
  [new InvalidRequestError([{ field: 'run_id', description: 'is required' }]), Code.InvalidArgument],
  [new InvalidInputError('the input', [{ field: 'amount', description: 'too small' }]), Code.InvalidArgument],
  [new InvalidResolutionError(RUN, 3, [{ field: 'qty', description: 'must be > 0' }]), Code.InvalidArgument],
  [new InvalidateTargetError(RUN, 9, 'no entry'), Code.InvalidArgument],
  [new UnstorableValueError('input.note'), Code.InvalidArgument],
  [new NotJsonError('a step result', 'a bigint'), Code.InvalidArgument],
  [new RunNotFoundError(RUN), Code.NotFound],
  [new WorkflowNotFoundError('nope'), Code.NotFound],
  [new ApprovalNotFoundError(`${RUN}:4`), Code.NotFound],
  [new ToolNotFoundError('nope'), Code.NotFound],
  [new FlowDriftError(RUN, 'wf', 'a'.repeat(64), 'b'.repeat(64)), Code.FailedPrecondition],
  [new RunStateError(RUN, 'SUCCEEDED', 'not finished'), Code.FailedPrecondition],
  [new NonDeterminismError(RUN, '', 'tool "a"', 'step "b"', 'same key'), Code.FailedPrecondition],
  [new JournalCorruptError(RUN, 2, 'gap'), Code.FailedPrecondition],
  [new IdempotencyConflictError('k', RUN), Code.AlreadyExists],
  [new LeaseLostError(RUN, 3), Code.Aborted],
  [new PayloadTooLargeError('input', 2_000_000, 1_048_576), Code.ResourceExhausted],
  [new JournalFullError(RUN, 100_000), Code.ResourceExhausted],
  [new StreamLimitError(1000), Code.ResourceExhausted],
  [new StoreUnavailableError('connect ECONNREFUSED 10.0.0.7:5432'), Code.Unavailable],
];

describe('error mapping', () => {
  it.each(TABLE.map(([err, code]) => [err.constructor.name, err, code] as const))(
    '%s becomes %s with an ErrorInfo carrying its reason', (_name, err, code) => {
      const mapped = toConnectError(err, silent);
      expect(mapped.code).toBe(code);
      const info = detail(mapped, ErrorInfoSchema);
      expect(info).toMatchObject({ reason: err.reason, domain: ERROR_DOMAIN });
      // Retryable errors tell the client when: RetryInfo.
      expect(detail(mapped, RetryInfoSchema) !== undefined).toBe(err.retryable);
    },
  );

  it('keeps driver details out of UNAVAILABLE and logs them instead', () => {
    const logs: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(line) });
    const mapped = toConnectError(new StoreUnavailableError('connect ECONNREFUSED 10.0.0.7:5432'), logger);
    expect(mapped.rawMessage).not.toContain('10.0.0.7');
    expect(logs.join('\n')).toContain('10.0.0.7');
  });

  it('FLOW_DRIFT lists the recovery choices in its metadata', () => {
    const mapped = toConnectError(new FlowDriftError(RUN, 'wf', 'a'.repeat(64), 'b'.repeat(64)), silent);
    expect(detail(mapped, ErrorInfoSchema)?.metadata).toMatchObject({ choices: 'restart,abandon', pinned_digest: 'a'.repeat(64) });
  });

  it('an unexpected error is INTERNAL without internals, and logged with its stack', async () => {
    const store = new MemoryStore();
    const broken = new Proxy(store, {
      get(target, key) {
        if (key === 'runGet') return async () => { throw new TypeError('cannot read properties of undefined (reading "secret_column")'); };
        const value = Reflect.get(target, key) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const t = apiHarness({ store: broken });
    const err = await failure(t.runs.getRun({ runId: RUN }));
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).toBe('internal error; the server logged the details');
    expect(err.rawMessage).not.toContain('secret_column');
    const line = t.logs.find((l) => l.msg === 'rpc failed' && l.level === 50);
    expect(line).toMatchObject({ rpc: '/waymark.v1.RunService/GetRun', run_id: RUN, fault: { type: 'TypeError' } });
    expect(JSON.stringify(line)).toContain('secret_column');
  });

  it('a store outage during an RPC is UNAVAILABLE with RetryInfo', async () => {
    const store = new MemoryStore();
    const down = new Proxy(store, {
      get(target, key) {
        if (key === 'runCreate') return async () => { throw new StoreUnavailableError('timeout exceeded when trying to connect'); };
        const value = Reflect.get(target, key) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const t = apiHarness({ store: down });
    const err = await failure(t.runs.startRun({ workflow: 'echo-flow', input: json({}) }));
    expect(err.code).toBe(Code.Unavailable);
    expect(detail(err, RetryInfoSchema)?.retryDelay?.seconds).toBe(1n);
  });
});
