import { z } from 'zod';
import { DEFAULT_DEFINITION_LIMITS } from '../journal/definition-limits.js';
import { DEFAULT_LIMITS, type Limits } from '../journal/limits.js';
import { EXECUTOR_DEFAULTS } from '../engine/index.js';
import { RESUME_CACHE_DEFAULTS } from '../engine/index.js';
import { DUE_TIMERS_DEFAULTS } from '../engine/index.js';
import { REPLICA_DEFAULTS } from '../engine/index.js';
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from '../server/transport/http2-sessions.js';
import { storeKindFor, storeUrlExamples } from '../store/open-store.js';
import { STORE_DEFAULTS } from '../store/store-kind.js';
import { DEFAULT_CLIENT_LIMITS, type ClientLimits } from '../server/transport/client-limits.js';
import { DISPATCHER_DEFAULTS, type DispatcherConfig } from '../webhooks/dispatcher.js';
import { parseSealingKeys, type SealingKey } from '../engine/index.js';
import { loadTlsFiles, TLS_DEFAULTS, TlsFileError, type TlsFiles } from '../server/transport/tls.js';
import { API_KEY_DEFAULTS } from '../engine/index.js';
import { MIN_SECRET_LENGTH } from '../engine/index.js';
import { isLoopbackHost } from '../server/transport/grpc-server.js';
import { RETENTION_DEFAULTS, type RetentionPolicy } from '../sweeper/retention-duty.js';
import { SWEEPER_DEFAULTS } from '../sweeper/sweeper.js';

/**
 * Settings come from the environment only (twelve-factor; Kubernetes ConfigMaps), validated once at
 * start. A bad value stops the process with one line naming the variable and what it expects.
 */
const hostPort = (example: string) =>
  z
    .string()
    .regex(/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, `must be host:port, e.g. ${example}`)
    .refine((v) => {
      const port = Number(v.slice(v.lastIndexOf(':') + 1));
      return port >= 0 && port <= 65535;
    }, 'port must be 0-65535');

const ORIGIN = /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$|^https?:\/\/\[[0-9a-fA-F:]+\](:\d{1,5})?$/;

const DAY_MS = 86_400_000;

const positiveInt = (what: string) =>
  z.coerce.number({ error: `must be ${what}` }).int(`must be ${what}`).positive(`must be ${what}`);
const nonNegativeInt = (what: string) =>
  z.coerce.number({ error: `must be ${what}` }).int(`must be ${what}`).min(0, `must be ${what}`);

const schema = z.object({
  DATABASE_URL: z
    .string()
    .refine((url) => storeKindFor(url) !== null, `must be ${storeUrlExamples()}, or unset for the embedded database`)
    .optional(),
  // WAYMARK_ADDRESS is the clients' name for the same address; WAYMARK_ADDR wins when both are set.
  WAYMARK_ADDR: hostPort('127.0.0.1:50051').optional(),
  WAYMARK_ADDRESS: hostPort('127.0.0.1:50051').optional(),
  WAYMARK_METRICS_ADDR: hostPort('127.0.0.1:9464').default('127.0.0.1:9464'),
  WAYMARK_LEASE_TTL_MS: positiveInt('a whole number of milliseconds > 0').default(30_000),
  WAYMARK_SWEEP_INTERVAL_MS: positiveInt('a whole number of milliseconds > 0').default(5_000),
  WAYMARK_SESSION_CHECK_MS: nonNegativeInt('a whole number of milliseconds >= 0 (0 leaves dead sessions to each sweep)').default(SWEEPER_DEFAULTS.sessionCheckMs),
  WAYMARK_TIMER_HORIZON_MS: nonNegativeInt('a whole number of milliseconds >= 0 (0 leaves every timer to the sweeper)').default(DUE_TIMERS_DEFAULTS.horizonMs),
  WAYMARK_SHUTDOWN_GRACE_MS: positiveInt('a whole number of milliseconds > 0').default(10_000),
  WAYMARK_SHUTDOWN_SETTLE_MS: positiveInt('a whole number of milliseconds > 0').default(2_000),
  WAYMARK_APPENDS_IN_FLIGHT: nonNegativeInt('a whole number >= 0 (0 turns group commit off)').default(STORE_DEFAULTS.appendsInFlight),
  WAYMARK_EXECUTOR_CONCURRENCY: positiveInt('a whole number > 0').default(EXECUTOR_DEFAULTS.concurrency),
  WAYMARK_RESUME_CACHE_ENTRIES: nonNegativeInt('a whole number >= 0 (0 turns hot resume off)').default(RESUME_CACHE_DEFAULTS.maxEntries),
  WAYMARK_RESUME_CACHE_BYTES: nonNegativeInt('a whole number of bytes >= 0 (0 turns hot resume off)').default(RESUME_CACHE_DEFAULTS.maxBytes),
  WAYMARK_REPLICA_TTL_MS: positiveInt('a whole number of milliseconds > 0').default(REPLICA_DEFAULTS.ttlMs),
  WAYMARK_RETENTION_DAYS: z.coerce.number({ error: 'must be a number of days >= 0 (0 keeps finished runs forever)' })
    .min(0, 'must be a number of days >= 0 (0 keeps finished runs forever)').default(RETENTION_DEFAULTS.defaultMs / DAY_MS),
  WAYMARK_RETENTION_NAMESPACES: z.string()
    .regex(/^\s*[a-z0-9][a-z0-9-]{0,62}=\d+(\.\d+)?\s*(,\s*[a-z0-9][a-z0-9-]{0,62}=\d+(\.\d+)?\s*)*$/, 'must be namespace=days pairs separated by commas, e.g. "scratch=1,audit=365" (0 days keeps that namespace\'s runs forever)')
    .optional(),
  WAYMARK_RETENTION_BATCH: positiveInt('a whole number of runs > 0').default(RETENTION_DEFAULTS.batchSize),
  WAYMARK_UNROUTABLE_AFTER_MS: positiveInt('a whole number of milliseconds > 0').default(60_000),
  WAYMARK_WORKFLOWS: z.string().min(1, 'must be the path of a workflows module (.ts, .mts, .cts, .tsx, .js, .mjs, .cjs or .jsx)').optional(),
  WAYMARK_DATA_DIR: z.string().min(1, 'must be a directory path').default('.waymark'),
  WAYMARK_NAMESPACE: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must be a lowercase name like "default"').default('default'),
  WAYMARK_LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], {
    error: 'must be one of trace, debug, info, warn, error, fatal, silent',
  }).default('info'),
  WAYMARK_LOG_FORMAT: z.enum(['auto', 'json', 'pretty'], { error: 'must be auto, json or pretty' }).default('auto'),
  WAYMARK_MAX_REQUEST_BYTES: positiveInt('a whole number of bytes > 0').default(DEFAULT_LIMITS.requestBytes),
  WAYMARK_MAX_PAYLOAD_BYTES: positiveInt('a whole number of bytes > 0').default(DEFAULT_LIMITS.payloadBytes),
  WAYMARK_PAYLOAD_INLINE_BYTES: positiveInt('a whole number of bytes > 0').default(DEFAULT_LIMITS.payloadInlineBytes),
  WAYMARK_MAX_JOURNAL_ENTRIES: positiveInt('a whole number > 0').default(DEFAULT_LIMITS.journalEntries),
  WAYMARK_MAX_JOURNAL_BYTES: positiveInt('a whole number of bytes > 0').default(DEFAULT_LIMITS.journalBytes),
  WAYMARK_MAX_STREAMS: positiveInt('a whole number > 0').default(DEFAULT_LIMITS.streamsPerReplica),
  WAYMARK_MAX_FLOW_NODES: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.flowNodes),
  WAYMARK_MAX_FLOW_EDGES: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.flowEdges),
  WAYMARK_MAX_FLOW_FAN_OUT: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.flowFanOut),
  WAYMARK_MAX_FLOW_BYTES: positiveInt('a whole number of bytes > 0').default(DEFAULT_DEFINITION_LIMITS.flowBytes),
  WAYMARK_MAX_CONDITION_CHARS: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.conditionChars),
  WAYMARK_MAX_FLOW_CONDITION_CHARS: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.flowConditionChars),
  WAYMARK_MAX_CONDITION_COST: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.conditionCost),
  WAYMARK_MAX_TEMPLATE_CHARS: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.templateChars),
  WAYMARK_MAX_SCHEMA_BYTES: positiveInt('a whole number of bytes > 0').default(DEFAULT_DEFINITION_LIMITS.schemaBytes),
  WAYMARK_MAX_SCHEMA_DEPTH: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.schemaDepth),
  WAYMARK_MAX_WORKER_TOOLS: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.workerTools),
  WAYMARK_MAX_NAMESPACE_TOOLS: positiveInt('a whole number > 0').default(DEFAULT_DEFINITION_LIMITS.namespaceTools),
  WAYMARK_HTTP2_IDLE_TIMEOUT_MS: positiveInt('a whole number of milliseconds > 0').default(DEFAULT_SESSION_LIMITS.idleTimeoutMs),
  WAYMARK_HTTP2_KEEPALIVE_MS: positiveInt('a whole number of milliseconds > 0').default(DEFAULT_SESSION_LIMITS.keepaliveMs),
  WAYMARK_HTTP2_PING_TIMEOUT_MS: positiveInt('a whole number of milliseconds > 0').default(DEFAULT_SESSION_LIMITS.pingTimeoutMs),
  WAYMARK_CLIENT_RATE_LIMIT: nonNegativeInt('a whole number of requests per second >= 0 (0: no limit)').default(DEFAULT_CLIENT_LIMITS.ratePerSecond),
  WAYMARK_CLIENT_RATE_BURST: positiveInt('a whole number of requests > 0').default(DEFAULT_CLIENT_LIMITS.burst),
  WAYMARK_CLIENT_MAX_STREAMS: positiveInt('a whole number > 0').default(DEFAULT_CLIENT_LIMITS.streams),
  WAYMARK_CLIENT_MAX_BUFFERED_BYTES: positiveInt('a whole number of bytes > 0').default(DEFAULT_CLIENT_LIMITS.bufferedBytes),
  WAYMARK_TLS_CERT_FILE: z.string().min(1, 'must be a path to a PEM certificate (chain)').optional(),
  WAYMARK_TLS_KEY_FILE: z.string().min(1, 'must be a path to a PEM private key').optional(),
  WAYMARK_TLS_CLIENT_CA_FILE: z.string().min(1, 'must be a path to a PEM CA bundle').optional(),
  WAYMARK_TLS_CLIENT_AUTH: z.enum(['require', 'optional'], { error: 'must be require or optional' }).default(TLS_DEFAULTS.clientAuth),
  WAYMARK_TLS_RELOAD_INTERVAL_MS: positiveInt('a whole number of milliseconds > 0').default(TLS_DEFAULTS.reloadIntervalMs),
  WAYMARK_HEALTH_ADDR: hostPort('0.0.0.0:50052').optional(),
  WAYMARK_SECRETS_KEYS: z.string().optional(),
  WAYMARK_WEBHOOK_ALLOW_PRIVATE: z.enum(['true', 'false'], { error: 'must be true or false' }).default('false'),
  WAYMARK_WEBHOOK_MAX_ATTEMPTS: positiveInt('a whole number > 0').default(DISPATCHER_DEFAULTS.maxAttempts),
  WAYMARK_WEBHOOK_BACKOFF_MS: positiveInt('a whole number of milliseconds > 0').default(DISPATCHER_DEFAULTS.backoffMs),
  WAYMARK_WEBHOOK_MAX_BACKOFF_MS: positiveInt('a whole number of milliseconds > 0').default(DISPATCHER_DEFAULTS.maxBackoffMs),
  WAYMARK_WEBHOOK_TIMEOUT_MS: positiveInt('a whole number of milliseconds > 0').default(DISPATCHER_DEFAULTS.timeoutMs),
  WAYMARK_WEBHOOK_CLAIM_TTL_MS: positiveInt('a whole number of milliseconds > 0').default(DISPATCHER_DEFAULTS.claimTtlMs),
  WAYMARK_WEBHOOK_INTERVAL_MS: positiveInt('a whole number of milliseconds > 0').default(DISPATCHER_DEFAULTS.intervalMs),
  WAYMARK_AUTH: z.enum(['on', 'off'], { error: 'must be on or off (off only with a loopback WAYMARK_ADDR)' }).default('on'),
  WAYMARK_AUTH_CACHE_MS: positiveInt('a whole number of milliseconds > 0').default(API_KEY_DEFAULTS.cacheMs),
  WAYMARK_STREAM_TOKEN_SECRET: z.string()
    .refine((v) => v.split(',').every((s) => s.trim().length >= MIN_SECRET_LENGTH), `must be one or more comma-separated values of at least ${MIN_SECRET_LENGTH} characters each (the first signs)`)
    .optional(),
  WAYMARK_CORS_ORIGINS: z.string()
    .refine((v) => v.split(',').every((o) => o.trim() === '*' || ORIGIN.test(o.trim())), 'must be comma-separated origins like https://app.example.com (scheme, host, optional port), or *')
    .optional(),
  WAYMARK_REFLECTION_PUBLIC: z.enum(['true', 'false'], { error: 'must be true or false' }).default('false'),
  WAYMARK_CONSOLE: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
});

export type Env = z.infer<typeof schema>;

export interface Config {
  databaseUrl: string | undefined;
  addr: { host: string; port: number };
  metricsAddr: { host: string; port: number };
  leaseTtlMs: number;
  sweepIntervalMs: number;
  /** How often the sweeper's leader looks for killed replicas' lease sessions between sweeps (0: only at each sweep). */
  sessionCheckMs: number;
  /** Deadlines due within this long of a run parking are held in memory and fired on time (0: off, the sweeper fires them). */
  timerHorizonMs: number;
  shutdownGraceMs: number;
  /** After the grace period, how long aborted executions get to settle before their leases are left to expire. */
  shutdownSettleMs: number;
  /** Journal appends a replica runs at once; those arriving meanwhile are group committed (0: off). */
  appendsInFlight: number;
  /** Runs this replica's executor executes at once (claimed PENDING runs; StartRun with wait is not counted). */
  executorConcurrency: number;
  /** Journal entries of parked runs this replica keeps so that their resume here reads none of it (0: off; docs/recovery.md "Hot resume"). */
  resumeCacheEntries: number;
  /** Estimated bytes of those journals (payloads plus a fixed cost per entry); 0 turns hot resume off. */
  resumeCacheBytes: number;
  /** A replica's heartbeat row expires this long after its last beat (routing). */
  replicaTtlMs: number;
  /** The sweeper reports a run PENDING this long that no live replica can execute. */
  unroutableAfterMs: number;
  /** Which finished runs the sweeper deletes, and when (docs/operations.md "Retention"). */
  retention: RetentionPolicy;
  workflowsPath: string | undefined;
  /** Serve the web console under /console/ on WAYMARK_ADDR (docs/console.md). */
  console: boolean;
  dataDir: string;
  namespace: string;
  logLevel: Env['WAYMARK_LOG_LEVEL'];
  /** `auto`: readable lines when standard output is a terminal, JSON lines otherwise. */
  logFormat: Env['WAYMARK_LOG_FORMAT'];
  limits: Limits;
  /** Idle timeout and keepalive of each HTTP/2 connection. */
  http2: SessionLimits;
  /** Request rate, open streams and unread response bytes per client (the peer address). */
  clients: ClientLimits;
  /** TLS on WAYMARK_ADDR (files checked to load at start); undefined: h2c. */
  tls: TlsFiles | undefined;
  /** A second, plaintext listener serving only grpc.health.v1 (Kubernetes probes cannot speak TLS). */
  healthAddr: { host: string; port: number } | undefined;
  /** The webhook dispatcher every server runs (webhooks/dispatcher.ts). */
  webhooks: DispatcherConfig;
  /** Authentication and authorization (docs/security.md). */
  auth: {
    /** WAYMARK_AUTH=off: every call unauthenticated; refused unless WAYMARK_ADDR is loopback. */
    enabled: boolean;
    /** How long a verified key is trusted before it is read again: the bound on a revocation reaching other replicas. */
    cacheMs: number;
    /** Stream-token HMAC secrets, the first signing; undefined: none (dev generates one in the data dir). */
    streamTokenSecrets: string[] | undefined;
    /** Origins answered with CORS headers. */
    corsOrigins: string[];
    reflectionPublic: boolean;
  };
  /** Keys sealing secret tools' payloads, the first sealing (WAYMARK_SECRETS_KEYS); undefined: none. */
  secretsKeys: SealingKey[] | undefined;
}

/** A setting that failed validation; `message` is the one line printed before exiting. */
export class ConfigError extends Error {
  constructor(readonly variable: string, readonly expected: string, got: string | undefined) {
    // A database URL may carry a password, and secrets and keys are secrets: never echo them.
    const shown = variable === 'DATABASE_URL' || variable === 'WAYMARK_STREAM_TOKEN_SECRET' || variable === 'WAYMARK_SECRETS_KEYS' ? '' : `=${JSON.stringify(got ?? '')}`;
    super(`invalid setting ${variable}${shown}: ${expected}`);
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings mean "unset", as shells and ConfigMaps produce them.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0]);
    throw new ConfigError(variable, issue.message, env[variable]);
  }
  const e = parsed.data;
  const tls = tlsFiles(e);
  const addr = splitHostPort(e.WAYMARK_ADDR ?? e.WAYMARK_ADDRESS ?? '127.0.0.1:50051');
  if (e.WAYMARK_AUTH === 'off' && !isLoopbackHost(addr.host)) {
    throw new ConfigError('WAYMARK_AUTH', `off is allowed only when WAYMARK_ADDR is a loopback address (127.0.0.1, ::1, localhost), not ${addr.host}; create a key instead (docs/security.md)`, e.WAYMARK_AUTH);
  }
  return {
    databaseUrl: e.DATABASE_URL,
    addr,
    metricsAddr: splitHostPort(e.WAYMARK_METRICS_ADDR),
    leaseTtlMs: e.WAYMARK_LEASE_TTL_MS,
    sweepIntervalMs: e.WAYMARK_SWEEP_INTERVAL_MS,
    sessionCheckMs: e.WAYMARK_SESSION_CHECK_MS,
    timerHorizonMs: e.WAYMARK_TIMER_HORIZON_MS,
    shutdownGraceMs: e.WAYMARK_SHUTDOWN_GRACE_MS,
    shutdownSettleMs: e.WAYMARK_SHUTDOWN_SETTLE_MS,
    appendsInFlight: e.WAYMARK_APPENDS_IN_FLIGHT,
    executorConcurrency: e.WAYMARK_EXECUTOR_CONCURRENCY,
    resumeCacheEntries: e.WAYMARK_RESUME_CACHE_ENTRIES,
    resumeCacheBytes: e.WAYMARK_RESUME_CACHE_BYTES,
    replicaTtlMs: e.WAYMARK_REPLICA_TTL_MS,
    unroutableAfterMs: e.WAYMARK_UNROUTABLE_AFTER_MS,
    retention: {
      defaultMs: Math.round(e.WAYMARK_RETENTION_DAYS * DAY_MS),
      namespaces: Object.fromEntries((e.WAYMARK_RETENTION_NAMESPACES ?? '').split(',').filter((p) => p.trim() !== '').map((pair) => {
        const [namespace, days] = pair.split('=').map((x) => x.trim());
        return [namespace!, Math.round(Number(days) * DAY_MS)];
      })),
      batchSize: e.WAYMARK_RETENTION_BATCH,
    },
    workflowsPath: e.WAYMARK_WORKFLOWS,
    console: e.WAYMARK_CONSOLE === 'on',
    dataDir: e.WAYMARK_DATA_DIR,
    namespace: e.WAYMARK_NAMESPACE,
    logLevel: e.WAYMARK_LOG_LEVEL,
    logFormat: e.WAYMARK_LOG_FORMAT,
    limits: {
      requestBytes: e.WAYMARK_MAX_REQUEST_BYTES,
      payloadBytes: e.WAYMARK_MAX_PAYLOAD_BYTES,
      payloadInlineBytes: e.WAYMARK_PAYLOAD_INLINE_BYTES,
      journalEntries: e.WAYMARK_MAX_JOURNAL_ENTRIES,
      journalBytes: e.WAYMARK_MAX_JOURNAL_BYTES,
      streamsPerReplica: e.WAYMARK_MAX_STREAMS,
      definitions: {
        flowNodes: e.WAYMARK_MAX_FLOW_NODES,
        flowEdges: e.WAYMARK_MAX_FLOW_EDGES,
        flowFanOut: e.WAYMARK_MAX_FLOW_FAN_OUT,
        flowBytes: e.WAYMARK_MAX_FLOW_BYTES,
        conditionChars: e.WAYMARK_MAX_CONDITION_CHARS,
        flowConditionChars: e.WAYMARK_MAX_FLOW_CONDITION_CHARS,
        conditionCost: e.WAYMARK_MAX_CONDITION_COST,
        templateChars: e.WAYMARK_MAX_TEMPLATE_CHARS,
        schemaBytes: e.WAYMARK_MAX_SCHEMA_BYTES,
        schemaDepth: e.WAYMARK_MAX_SCHEMA_DEPTH,
        workerTools: e.WAYMARK_MAX_WORKER_TOOLS,
        namespaceTools: e.WAYMARK_MAX_NAMESPACE_TOOLS,
      },
    },
    http2: {
      idleTimeoutMs: e.WAYMARK_HTTP2_IDLE_TIMEOUT_MS,
      keepaliveMs: e.WAYMARK_HTTP2_KEEPALIVE_MS,
      pingTimeoutMs: e.WAYMARK_HTTP2_PING_TIMEOUT_MS,
    },
    clients: {
      ratePerSecond: e.WAYMARK_CLIENT_RATE_LIMIT,
      burst: e.WAYMARK_CLIENT_RATE_BURST,
      streams: e.WAYMARK_CLIENT_MAX_STREAMS,
      bufferedBytes: e.WAYMARK_CLIENT_MAX_BUFFERED_BYTES,
    },
    tls,
    healthAddr: e.WAYMARK_HEALTH_ADDR === undefined ? undefined : splitHostPort(e.WAYMARK_HEALTH_ADDR),
    auth: {
      enabled: e.WAYMARK_AUTH === 'on',
      cacheMs: e.WAYMARK_AUTH_CACHE_MS,
      streamTokenSecrets: e.WAYMARK_STREAM_TOKEN_SECRET?.split(',').map((s) => s.trim()),
      corsOrigins: e.WAYMARK_CORS_ORIGINS?.split(',').map((o) => o.trim()) ?? [],
      reflectionPublic: e.WAYMARK_REFLECTION_PUBLIC === 'true',
    },
    webhooks: webhookSettings(e),
    secretsKeys: sealingKeys(e.WAYMARK_SECRETS_KEYS),
  };
}

function sealingKeys(text: string | undefined): SealingKey[] | undefined {
  if (text === undefined) return undefined;
  try {
    return parseSealingKeys(text);
  } catch (err) {
    throw new ConfigError('WAYMARK_SECRETS_KEYS', (err as Error).message, text);
  }
}

function webhookSettings(e: Env): DispatcherConfig {
  if (e.WAYMARK_WEBHOOK_CLAIM_TTL_MS <= e.WAYMARK_WEBHOOK_TIMEOUT_MS) {
    throw new ConfigError('WAYMARK_WEBHOOK_CLAIM_TTL_MS', `must exceed WAYMARK_WEBHOOK_TIMEOUT_MS (${e.WAYMARK_WEBHOOK_TIMEOUT_MS}), or a slow attempt would be repeated while it runs`, String(e.WAYMARK_WEBHOOK_CLAIM_TTL_MS));
  }
  return {
    ...DISPATCHER_DEFAULTS,
    allowPrivate: e.WAYMARK_WEBHOOK_ALLOW_PRIVATE === 'true',
    maxAttempts: e.WAYMARK_WEBHOOK_MAX_ATTEMPTS,
    backoffMs: e.WAYMARK_WEBHOOK_BACKOFF_MS,
    maxBackoffMs: e.WAYMARK_WEBHOOK_MAX_BACKOFF_MS,
    timeoutMs: e.WAYMARK_WEBHOOK_TIMEOUT_MS,
    claimTtlMs: e.WAYMARK_WEBHOOK_CLAIM_TTL_MS,
    intervalMs: e.WAYMARK_WEBHOOK_INTERVAL_MS,
  };
}

/** The TLS settings, which go together; each file is read once here so a bad one stops the start (exit 78). */
function tlsFiles(e: Env): TlsFiles | undefined {
  const cert = e.WAYMARK_TLS_CERT_FILE;
  const key = e.WAYMARK_TLS_KEY_FILE;
  if (cert === undefined && key === undefined) {
    if (e.WAYMARK_TLS_CLIENT_CA_FILE !== undefined) throw new ConfigError('WAYMARK_TLS_CLIENT_CA_FILE', 'needs WAYMARK_TLS_CERT_FILE and WAYMARK_TLS_KEY_FILE (mTLS is TLS with client certificates)', e.WAYMARK_TLS_CLIENT_CA_FILE);
    return undefined;
  }
  if (cert === undefined) throw new ConfigError('WAYMARK_TLS_CERT_FILE', 'must be set with WAYMARK_TLS_KEY_FILE', undefined);
  if (key === undefined) throw new ConfigError('WAYMARK_TLS_KEY_FILE', 'must be set with WAYMARK_TLS_CERT_FILE', undefined);
  const files: TlsFiles = { certFile: cert, keyFile: key, clientCaFile: e.WAYMARK_TLS_CLIENT_CA_FILE, clientAuth: e.WAYMARK_TLS_CLIENT_AUTH, reloadIntervalMs: e.WAYMARK_TLS_RELOAD_INTERVAL_MS };
  try {
    loadTlsFiles(files);
  } catch (err) {
    if (!(err instanceof TlsFileError)) throw err;
    const variable = err.file === key ? 'WAYMARK_TLS_KEY_FILE' : err.file === e.WAYMARK_TLS_CLIENT_CA_FILE ? 'WAYMARK_TLS_CLIENT_CA_FILE' : 'WAYMARK_TLS_CERT_FILE';
    throw new ConfigError(variable, err.message, err.file);
  }
  return files;
}

function splitHostPort(v: string): { host: string; port: number } {
  const i = v.lastIndexOf(':');
  return { host: v.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(v.slice(i + 1)) };
}
