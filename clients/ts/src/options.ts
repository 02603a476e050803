import type { JsonValue } from '@bufbuild/protobuf';
import type { Transport } from '@connectrpc/connect';
import type { ReconnectInfo } from './events.js';
import type { ApprovalState, RunStatus } from './gen/waymark/v1/run_pb.js';
import type { DriftRecovery, WaitFor } from './gen/waymark/v1/run_service_pb.js';
import type { ApprovalStateName, DriftRecoveryName, RunStatusName, WaitForName } from './names.js';
import type { RetryPolicy } from './retry.js';

/*
 * The options of the client and of its methods. Every optional property also accepts undefined,
 * so applications compiled with exactOptionalPropertyTypes can pass values through.
 */

/** TLS settings; `true` uses Node's default trust store. */
/**
 * Where `waymark dev` listens; the address when neither the options nor WAYMARK_ADDRESS give one.
 * Here, not in environment.ts, so the client's public types never load Node's (a project compiled
 * with `"types": []` must still type-check them: clients/ts/test/package.test.ts).
 */
export const DEFAULT_ADDRESS = '127.0.0.1:50051';

export interface TlsOptions {
  /** PEM of the CA (or CAs) to trust instead of Node's defaults, e.g. a cluster's own CA. */
  ca?: string | Uint8Array | undefined;
  /** PEM client certificate, for a server that asks for one (mTLS). */
  cert?: string | Uint8Array | undefined;
  /** PEM private key of `cert`. */
  key?: string | Uint8Array | undefined;
  /** The name to verify the server's certificate against, when it differs from the address's host. */
  serverName?: string | undefined;
}

/** A bearer token, or a function returning the current one (called before every call). */
export type TokenSource = string | (() => string | Promise<string>);

export interface ClientOptions {
  /** `host:port` (default: the WAYMARK_ADDRESS environment variable, else 127.0.0.1:50051). */
  address?: string | undefined;
  /**
   * TLS (https) instead of plaintext HTTP/2, which `waymark dev` and in-cluster servers speak.
   * `true` trusts Node's default CAs; an object gives the CA PEM (and a client certificate).
   * Unset: on when WAYMARK_TLS=1 or any of WAYMARK_CA_FILE, WAYMARK_CLIENT_CERT_FILE and
   * WAYMARK_CLIENT_KEY_FILE (PEM files) or WAYMARK_SERVER_NAME is set; those also fill the fields
   * an object or `true` leaves out. `false`: plaintext whatever the environment says.
   */
  tls?: boolean | TlsOptions | undefined;
  /**
   * Sent as `authorization: Bearer <token>` with every call; a function is asked before each call.
   * Default: the WAYMARK_TOKEN environment variable, else none.
   */
  token?: TokenSource | undefined;
  /** The namespace of every call (default: WAYMARK_NAMESPACE, else the server's, "default"). */
  namespace?: string | undefined;
  /**
   * Deadline of each attempt of a unary call that sets no `timeoutMs` of its own (default
   * 30 000 ms). Event streams have none.
   */
  timeoutMs?: number | undefined;
  /** Backoff, the retry budget and the event streams' give-up window (docs/clients.md). */
  retry?: Partial<RetryPolicy> | undefined;
  /** A transport of your own (interceptors, another protocol); address, tls and token (and their variables) are then ignored. */
  transport?: Transport | undefined;
}

/** Options every method takes. */
export interface CallOptions {
  /** Aborts the call (all its attempts); the method then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * Deadline of the whole call, retries included, in ms; past it the call fails with
   * DEADLINE_EXCEEDED. For iterators it applies to each page; for `events` and `result`, to the
   * whole wait.
   */
  timeoutMs?: number | undefined;
  /** This call's retry budget or backoff, or false for a single attempt. */
  retry?: Partial<RetryPolicy> | false | undefined;
}

export interface StartOptions extends CallOptions {
  /**
   * Makes the start idempotent in the namespace: a repeat returns the first run (created false).
   * When unset the client generates one (`client:<uuid>`) so its own retries are safe.
   */
  idempotencyKey?: string | undefined;
  /** Execute at once on the receiving server and answer when the run ends or parks for the first time, on anything. */
  wait?: boolean | undefined;
  /**
   * Wait until the run reaches this point (docs/api.md "Waiting for a run"): 'END', 'OUTSIDE_INPUT'
   * (ended, or parked on an approval or a signal; timers, backoffs, remote tools and child runs are
   * waited through) or 'FIRST_PARK' (as `wait`). Without `timeoutMs` the client asks again (same
   * idempotency key) each time the server answers at an attempt's deadline, until the run gets
   * there; with it, the server answers a little before it, with the run as it stands and
   * `waitComplete` false if the run has not got there (it goes on).
   */
  waitFor?: WaitFor | WaitForName | undefined;
  labels?: Record<string, string> | undefined;
  budgetUsd?: number | undefined;
  dryRun?: boolean | undefined;
  /**
   * The run's own timeout in milliseconds (StartRun `timeout`): a run not finished this long after
   * it was created fails with error reason `run_timed_out` and its unfinished children are
   * cancelled. Replaces the workflow definition's timeout; unset: the definition's, if any.
   * (`timeoutMs` bounds this call only.)
   */
  runTimeoutMs?: number | undefined;
}

export interface RunFilter extends CallOptions {
  statuses?: Array<RunStatus | RunStatusName> | undefined;
  workflow?: string | undefined;
  labels?: Record<string, string> | undefined;
  parentRunId?: string | undefined;
  pageSize?: number | undefined;
}

export interface ApprovalFilter extends CallOptions {
  runId?: string | undefined;
  workflow?: string | undefined;
  labels?: Record<string, string> | undefined;
  /** Empty means pending only. */
  states?: Array<ApprovalState | ApprovalStateName> | undefined;
  pageSize?: number | undefined;
}

export interface JournalOptions extends CallOptions {
  /** Entries after this seq; unset starts at the first. */
  afterSeq?: bigint | undefined;
  pageSize?: number | undefined;
  /**
   * Payloads stored out of line (results over the server's inline threshold, 64 KiB by default) in
   * the entries; without it such an entry has `payloadRef` instead of `payload` (docs/journal.md
   * "Large payloads"). Pages then end early so each stays near 4 MiB of such payloads.
   */
  includeLargePayloads?: boolean | undefined;
}

export interface EventsOptions {
  /** Start after this seq (the last one a previous stream delivered); unset starts at the first event. */
  afterSeq?: bigint | undefined;
  /** Keep the stream open while the run is parked, until it ends. */
  followSuspended?: boolean | undefined;
  /** Called before each reconnect: attempt number, the error, the seq it resumes after. */
  onReconnect?: ((info: ReconnectInfo) => void) | undefined;
  /** Stops the stream; the iteration then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Ends the stream with DEADLINE_EXCEEDED after this many ms. */
  timeoutMs?: number | undefined;
  /** This stream's give-up window (default the client's retry.streamGiveUpMs). */
  giveUpAfterMs?: number | undefined;
  /** Events carry payloads stored out of line (over the server's 64 KiB threshold) instead of payloadRef (docs/journal.md "Large payloads"). */
  includeLargePayloads?: boolean | undefined;
}

export interface TokensOptions extends EventsOptions {
  /** Start after this delta offset (the last one a previous stream delivered); unset starts at the first delta kept. */
  afterOffset?: bigint | undefined;
}

export interface ResultOptions extends Omit<EventsOptions, 'afterSeq' | 'followSuspended'> {}

export interface ResumeOptions extends CallOptions {
  /** Seqs of journal entries to unpin so their effects run again. */
  invalidate?: bigint[] | undefined;
  /** RESTART or ABANDON, for a run that threw FlowDrift. */
  driftRecovery?: DriftRecovery | DriftRecoveryName | undefined;
}

export interface ForkOptions extends CallOptions {
  /**
   * The fork's own idempotency key: a repeat returns the first fork (created false). When unset
   * the client generates one (`client:<uuid>`) so its own retries are safe.
   */
  idempotencyKey?: string | undefined;
  /** The fork's input; unset: the source's. */
  input?: JsonValue | undefined;
  /** The model every live model call of the fork's agents uses; unset: the source's. */
  model?: string | undefined;
  /** The workflow version the fork runs on (the one the server runs); unset: the source's. */
  workflowVersion?: string | undefined;
  /** A decision for the approval at the fork point. */
  decision?: 'approve' | 'deny' | { approve: boolean; comment?: string | undefined; by?: string | undefined } | undefined;
  /** The fork's budget in US dollars; unset: the source's. */
  budgetUsd?: number | undefined;
  /** Added to the source's labels. */
  labels?: Record<string, string> | undefined;
  /** Execute the fork on the receiving server and answer when it ends or parks. */
  wait?: boolean | undefined;
}

export interface PurgeOptions extends CallOptions {
  /** Only root runs that ended at least this long ago, in milliseconds; 0: every finished run. */
  olderThanMs: number;
  /** Only root runs that ended so: SUCCEEDED, FAILED or CANCELLED; unset: all three. */
  statuses?: (RunStatus | RunStatusName)[] | undefined;
  /** Only runs of this workflow. */
  workflow?: string | undefined;
  /** Count what would go; delete nothing. */
  dryRun?: boolean | undefined;
  /** Most root runs this call deletes, 1 to 10 000; the server's default is 1 000. */
  limit?: number | undefined;
}

export interface SignalOptions extends CallOptions {
  /** Makes the delivery idempotent; default a random id per call. */
  signalId?: string | undefined;
}

export interface Decision extends CallOptions {
  /** Who decides, recorded in the journal. */
  by: string;
  comment?: string | undefined;
  /** Returned to the workflow; must satisfy the approval's payload_schema. */
  payload?: JsonValue | undefined;
  /** Makes the decision idempotent; default a random id per call. */
  requestId?: string | undefined;
}

export interface ReadyOptions {
  /** Keep checking (with backoff) until the server serves or timeoutMs passes; default one check (fail fast). */
  wait?: boolean | undefined;
  signal?: AbortSignal | undefined;
  /** Default 5 000 ms for one check, the retry budget when waiting. */
  timeoutMs?: number | undefined;
}
