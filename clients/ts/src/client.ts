import { fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import { Code, createClient, type CallOptions, type Client, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { randomBytes } from 'node:crypto';
import { alreadyResolved, toWaymarkError, Unavailable, type WaymarkError } from './errors.js';
import {
  RunStatus, type Approval, type ApprovalState, type JournalEntry, type ResumePreview, type Run, type RunEvent, type Workflow,
} from './gen/waymark/v1/run_pb.js';
import { DriftRecovery, RunService, type GetRunResponse, type ResumeRunResponse, type StartRunResponse } from './gen/waymark/v1/run_service_pb.js';
import { SignalService, type DecideApprovalResponse, type SendSignalResponse } from './gen/waymark/v1/signal_service_pb.js';

/** The `reason` of a response whose resolution lost to another. */
const ALREADY_RESOLVED = 'already_resolved';

const RETRY_ATTEMPTS = 5;

/** Where `waymark dev` listens. */
export const DEFAULT_ADDRESS = '127.0.0.1:50051';

/**
 * Paces the reconnects of an event stream: the first wait is `initialMs`, each further one
 * doubles up to `maxMs` (with jitter), and the stream gives up after failing to reconnect for
 * `giveUpAfterMs` in a row. An event received starts over.
 */
export interface Backoff {
  initialMs: number;
  maxMs: number;
  giveUpAfterMs: number;
}

export interface ClientOptions {
  /** `host:port` (default 127.0.0.1:50051). */
  address?: string;
  /** TLS (https) instead of plaintext HTTP/2, which `waymark dev` and in-cluster servers speak. */
  tls?: boolean;
  /** Sent as `authorization: Bearer <token>` with every call. */
  token?: string;
  /** The namespace of every call (default "default"). */
  namespace?: string;
  /** Deadline of unary calls in ms (default 30 000); event streams have none. */
  timeoutMs?: number;
  backoff?: Partial<Backoff>;
  /** A transport of your own (interceptors, another protocol); address, tls and token are then ignored. */
  transport?: Transport;
}

export interface StartOptions {
  /** Makes the start idempotent in the namespace: a repeat returns the first run (created false). */
  idempotencyKey?: string;
  /** Execute at once on the receiving server and answer when the run ends or parks (give timeoutMs room). */
  wait?: boolean;
  labels?: Record<string, string>;
  budgetUsd?: number;
  dryRun?: boolean;
  timeoutMs?: number;
}

export interface RunFilter {
  statuses?: RunStatus[];
  workflow?: string;
  labels?: Record<string, string>;
  parentRunId?: string;
  pageSize?: number;
}

export interface ApprovalFilter {
  runId?: string;
  workflow?: string;
  labels?: Record<string, string>;
  /** Empty means pending only. */
  states?: ApprovalState[];
  pageSize?: number;
}

export interface EventsOptions {
  /** Start after this seq (the last one a previous stream delivered); unset starts at the first event. */
  afterSeq?: bigint;
  /** Keep the stream open while the run is parked, until it ends. */
  followSuspended?: boolean;
  /** Called before each reconnect with the seq the stream resumes after (-1n: none yet). */
  onReconnect?: (afterSeq: bigint, cause: WaymarkError) => void;
  /** Stops the stream; the iteration then throws the signal's reason. */
  signal?: AbortSignal;
}

export interface Decision {
  /** Who decides, recorded in the journal. */
  by: string;
  comment?: string;
  /** Returned to the workflow; must satisfy the approval's payload_schema. */
  payload?: JsonValue;
  /** Makes the decision idempotent; default a random id. */
  requestId?: string;
}

/**
 * A client for one Waymark server (or a load-balanced address of several). Methods throw the
 * typed errors of errors.ts. `runs` and `signals` are the generated Connect clients, for
 * anything not wrapped here.
 */
export class WaymarkClient {
  readonly runs: Client<typeof RunService>;
  readonly signals: Client<typeof SignalService>;
  readonly namespace: string;
  private readonly timeoutMs: number;
  private readonly backoff: Backoff;
  private readonly sessions: Http2SessionManager | undefined;

  constructor(options: ClientOptions = {}) {
    this.namespace = options.namespace ?? '';
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.backoff = { initialMs: 100, maxMs: 5_000, giveUpAfterMs: 120_000, ...options.backoff };
    let transport = options.transport;
    if (!transport) {
      const baseUrl = `${options.tls ? 'https' : 'http'}://${options.address ?? DEFAULT_ADDRESS}`;
      // Keep idle follow-streams alive through proxies; 30 s is the smallest client ping
      // interval most servers and proxies accept.
      this.sessions = new Http2SessionManager(baseUrl, { pingIntervalMs: 30_000, pingTimeoutMs: 10_000, idleConnectionTimeoutMs: 15 * 60_000 });
      const interceptors: Interceptor[] = [];
      if (options.token) {
        const authorization = `Bearer ${options.token}`;
        interceptors.push((next) => (req) => {
          req.header.set('authorization', authorization);
          return next(req);
        });
      }
      transport = createGrpcTransport({ baseUrl, sessionManager: this.sessions, interceptors, readMaxBytes: 16 << 20 });
    }
    this.runs = createClient(RunService, transport);
    this.signals = createClient(SignalService, transport);
  }

  /** Closes the connection; calls in flight fail. */
  close(): void {
    this.sessions?.abort();
  }

  private async call<T>(fn: (options: CallOptions) => Promise<T>, timeoutMs = this.timeoutMs): Promise<T> {
    try {
      return await fn({ timeoutMs });
    } catch (err) {
      throw toWaymarkError(err);
    }
  }

  /**
   * `call` for requests that are safe to repeat (reads, cancels, and signals and decisions, which
   * always carry an id that makes a repeat a no-op): retried while the server is unavailable (a
   * restart, a rollout), up to 5 attempts. StartRun and ResumeRun are not retried.
   */
  private async retried<T>(fn: (options: CallOptions) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.call(fn);
      } catch (err) {
        if (!(err instanceof Unavailable) || attempt >= RETRY_ATTEMPTS) throw err;
        await delay(jitter(Math.min(200 * 2 ** (attempt - 1), 3_000)), undefined);
      }
    }
  }

  // Runs

  /** Starts a run of `workflow` with a JSON `input`. */
  async startRun(workflow: string, input: JsonValue | undefined, options: StartOptions = {}): Promise<StartRunResponse> {
    const request = {
      namespace: this.namespace,
      workflow,
      input: toValue(input),
      idempotencyKey: options.idempotencyKey ?? '',
      wait: options.wait ?? false,
      labels: options.labels ?? {},
      budgetUsd: options.budgetUsd,
      dryRun: options.dryRun ?? false,
    };
    return this.call((o) => this.runs.startRun(request, o), options.timeoutMs);
  }

  /** A run and, when it is suspended, what it waits for (`waitingOn`). */
  async getRun(runId: string): Promise<GetRunResponse> {
    return this.retried((o) => this.runs.getRun({ namespace: this.namespace, runId }, o));
  }

  /** Iterates over matching runs, newest first, fetching pages as the loop advances. */
  async *listRuns(filter: RunFilter = {}): AsyncGenerator<Run, void, undefined> {
    let pageToken = '';
    do {
      const page = await this.retried((o) =>
        this.runs.listRuns(
          {
            namespace: this.namespace,
            statuses: filter.statuses ?? [],
            workflow: filter.workflow ?? '',
            labels: filter.labels ?? {},
            parentRunId: filter.parentRunId ?? '',
            pageSize: filter.pageSize ?? 0,
            pageToken,
          },
          o,
        ),
      );
      yield* page.runs;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /** Iterates over a run's journal in seq order (after `afterSeq` when given). */
  async *journal(runId: string, options: { afterSeq?: bigint; pageSize?: number } = {}): AsyncGenerator<JournalEntry, void, undefined> {
    let pageToken = '';
    do {
      const page = await this.retried((o) =>
        this.runs.getJournal({ namespace: this.namespace, runId, afterSeq: options.afterSeq, pageSize: options.pageSize ?? 0, pageToken }, o),
      );
      yield* page.entries;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /**
   * Yields a run's events: its history, then live events until it ends (or parks, unless
   * `followSuspended`); the server decides when, so a run that parked and was resumed streams on.
   * When the connection drops or the server answers UNAVAILABLE (a restart,
   * a rollout) it reconnects by itself with backoff, resuming after the last seq it yielded, so
   * every event arrives exactly once and in seq order. Other failures throw the typed error; so
   * does failing to reconnect for longer than `backoff.giveUpAfterMs`. Breaking out of the loop
   * closes the stream.
   */
  async *events(runId: string, options: EventsOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    const follow = options.followSuspended ?? false;
    let last = options.afterSeq ?? -1n;
    let attempt = 0;
    let failingSince: number | undefined;
    for (;;) {
      let error: WaymarkError | undefined;
      const stream = new AbortController();
      const stop = (): void => stream.abort(options.signal?.reason);
      options.signal?.addEventListener('abort', stop);
      try {
        options.signal?.throwIfAborted();
        const request = { namespace: this.namespace, runId, afterSeq: last >= 0n ? last : undefined, followSuspended: follow };
        for await (const { event } of this.runs.streamRunEvents(request, { signal: stream.signal })) {
          if (!event || event.seq <= last) continue; // delivered before a reconnect
          last = event.seq;
          attempt = 0;
          failingSince = undefined;
          yield event;
        }
      } catch (err) {
        if (options.signal?.aborted) throw options.signal.reason;
        const typed = toWaymarkError(err);
        if (!reconnectable(typed) && !droppedByPeer(typed)) throw typed;
        error = typed;
      } finally {
        options.signal?.removeEventListener('abort', stop);
        stream.abort();
      }
      // The server ended the stream: the run ended (or parked). It never ends one cleanly otherwise.
      if (!error) return;
      const now = Date.now();
      failingSince ??= now;
      if (now - failingSince > this.backoff.giveUpAfterMs) throw error;
      options.onReconnect?.(last, error);
      await delay(jitter(Math.min(this.backoff.initialMs * 2 ** attempt, this.backoff.maxMs)), options.signal);
      attempt += 1;
    }
  }

  /**
   * Makes a suspended or failed run execute again; `invalidate` unpins entries by seq.
   * `driftRecovery` (RESTART or ABANDON) recovers a run that threw FlowDrift; with RESTART the
   * response's `restartedAs` is the new run.
   */
  async resume(runId: string, options: { invalidate?: bigint[]; driftRecovery?: DriftRecovery } = {}): Promise<ResumeRunResponse> {
    const request = { namespace: this.namespace, runId, invalidate: options.invalidate ?? [], driftRecovery: options.driftRecovery ?? DriftRecovery.UNSPECIFIED };
    return this.call((o) => this.runs.resumeRun(request, o));
  }

  /** What `resume` would do, computed with no live calls and nothing written. */
  async previewResume(runId: string, invalidate: bigint[] = []): Promise<ResumePreview | undefined> {
    return (await this.call((o) => this.runs.resumeRun({ namespace: this.namespace, runId, invalidate, dryRun: true }, o))).preview;
  }

  /** Cancels a run; cancelling a finished run returns it unchanged. */
  async cancel(runId: string, reason = ''): Promise<Run | undefined> {
    return (await this.retried((o) => this.runs.cancelRun({ namespace: this.namespace, runId, reason }, o))).run;
  }

  async listWorkflows(): Promise<Workflow[]> {
    return (await this.retried((o) => this.runs.listWorkflows({ namespace: this.namespace }, o))).workflows;
  }

  // Signals and approvals

  /**
   * Delivers a named signal. `signalId` makes it idempotent (default a random id); a repeat is
   * answered like the first (reason "duplicate"). A run not waiting for the signal yet keeps it
   * for its next wait of that name (`buffered`). Throws AlreadyResolved when another resolution
   * already closed the wait.
   */
  async sendSignal(runId: string, name: string, payload?: JsonValue, options: { signalId?: string } = {}): Promise<SendSignalResponse> {
    const request = { namespace: this.namespace, runId, name, payload: toValue(payload), signalId: options.signalId ?? randomId() };
    const response = await this.retried((o) => this.signals.sendSignal(request, o));
    if (!response.applied && response.reason === ALREADY_RESOLVED) throw alreadyResolved(`the wait for signal "${name}" of run ${runId}`, response);
    return response;
  }

  /** Iterates over approvals, pending ones unless `states` says otherwise, oldest first. */
  async *listApprovals(filter: ApprovalFilter = {}): AsyncGenerator<Approval, void, undefined> {
    let pageToken = '';
    do {
      const page = await this.retried((o) =>
        this.signals.listApprovals(
          {
            namespace: this.namespace,
            runId: filter.runId ?? '',
            workflow: filter.workflow ?? '',
            labels: filter.labels ?? {},
            states: filter.states ?? [],
            pageSize: filter.pageSize ?? 0,
            pageToken,
          },
          o,
        ),
      );
      yield* page.approvals;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  async getApproval(id: string): Promise<Approval | undefined> {
    return (await this.retried((o) => this.signals.getApproval({ namespace: this.namespace, id }, o))).approval;
  }

  /**
   * Approves. A repeated `requestId` is answered like the first call (reason "duplicate"). Throws
   * AlreadyResolved (with `response`) when another decision, a timeout or a cancellation already
   * resolved the approval.
   */
  async approve(id: string, decision: Decision): Promise<DecideApprovalResponse> {
    return this.decide(id, true, decision);
  }

  /** Denies; see `approve`. */
  async deny(id: string, decision: Decision): Promise<DecideApprovalResponse> {
    return this.decide(id, false, decision);
  }

  private async decide(id: string, approve: boolean, d: Decision): Promise<DecideApprovalResponse> {
    const request = {
      namespace: this.namespace,
      id,
      approve,
      by: d.by,
      comment: d.comment ?? '',
      payload: toValue(d.payload),
      requestId: d.requestId ?? randomId(),
    };
    const response = await this.retried((o) => this.signals.decideApproval(request, o));
    if (!response.applied && response.reason === ALREADY_RESOLVED) throw alreadyResolved(`approval ${id}`, response);
    return response;
  }
}

/** A client for `address` (default 127.0.0.1:50051); see ClientOptions. */
export function createWaymarkClient(options: ClientOptions = {}): WaymarkClient {
  return new WaymarkClient(options);
}

/** A JSON value as google.protobuf.Value; undefined leaves the payload unset. */
export function toValue(json: JsonValue | undefined): Value | undefined {
  return json === undefined ? undefined : fromJson(ValueSchema, json);
}

/** A google.protobuf.Value as plain JSON; unset is undefined. */
export function fromValue(value: Value | undefined): JsonValue | undefined {
  return value === undefined ? undefined : toJson(ValueSchema, value);
}

/** True when a run in this status has ended. */
export function isTerminal(status: RunStatus): boolean {
  return status === RunStatus.SUCCEEDED || status === RunStatus.FAILED || status === RunStatus.CANCELLED;
}

/** The server went away or is restarting, and said so. */
function reconnectable(err: WaymarkError): boolean {
  return err.code === Code.Unavailable;
}

/**
 * The connection broke mid-stream without a status from the server (a killed process, a reset):
 * connect-node reports a reset socket as ABORTED, a stream the peer cancelled as CANCELED (this
 * stream is only cancelled by us after the catch, so here it was the peer), and an HTTP/2 stream
 * reset with an error code as INTERNAL ("http/2 stream closed with error code ..."). Errors the
 * server sends carry an ErrorInfo (LEASE_LOST is an ABORTED with one), and its INTERNAL (a bug)
 * has another message, so neither is mistaken for a drop.
 */
function droppedByPeer(err: WaymarkError): boolean {
  if (err.reason !== '') return false;
  if (err.code === Code.Aborted || err.code === Code.Canceled) return true;
  return err.code === Code.Internal && err.message.startsWith('http/2 stream closed');
}

function jitter(ms: number): number {
  return ms / 2 + Math.random() * (ms / 2);
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function randomId(): string {
  return randomBytes(12).toString('hex');
}
