import { Code, ConnectError, createContextKey, type Interceptor } from '@connectrpc/connect';
import type { ApiKey, KeyVerification } from '../../engine/index.js';
import { isStreamToken, type StreamTokens } from '../../engine/index.js';
import { ApprovalNotFoundError } from '../../engine/index.js';
import { ErrorInfoSchema, ResourceInfoSchema } from '../../gen/google/rpc/error_details_pb.js';
import { RunNotFoundError } from '../../journal/errors.js';
import { ACCESS_RULES } from './access-rules.js';
import { clientCertificateKey, type ClientCertificate } from './client-certificate.js';
import { domainStatus, ERROR_DOMAIN } from '../errors/error-mapping.js';

/*
 * Authentication and authorization, in one place before any handler (docs/security.md): every RPC
 * is looked up in ACCESS_RULES (access-rules.ts); all but health checks (and reflection, when
 * public) need `authorization: Bearer <API key | stream token>`, or, with no such header, a
 * verified mTLS client certificate bound to an API key (the bearer decides when both are sent).
 * A refusal is thrown before
 * `next(req)`, so nothing is written, and its message and metadata never carry the credential.
 *
 * The namespace comes from the credential: a namespaced key's calls are in its namespace (an
 * empty `namespace` field is filled in with it), and a request naming another namespace is
 * answered NOT_FOUND (NAMESPACE_NOT_FOUND) whether or not that namespace exists, so a key learns
 * nothing of other tenants. An admin key (no namespace) may name any. A missing scope is
 * PERMISSION_DENIED only on a resource the key can see: for a call addressing a run or approval
 * that does not exist in the key's namespace, the answer is the handler's own NOT_FOUND
 * (RUN_NOT_FOUND, APPROVAL_NOT_FOUND), never a PERMISSION_DENIED that would confirm it exists.
 */

/** Who makes the call; handlers read it (DecideApproval journals the key id). */
export type Caller =
  | { kind: 'anonymous' }
  | { kind: 'key'; key: ApiKey }
  | { kind: 'stream-token'; namespace: string; runId: string; expiresAt: Date };

export const callerKey = createContextKey<Caller>({ kind: 'anonymous' }, { description: 'waymark caller' });

/** The key id of the call's API key, or null (authentication off, or a stream token). */
export function callerKeyId(caller: Caller): string | null {
  return caller.kind === 'key' ? caller.key.id : null;
}

export interface AuthOptions {
  keys: {
    verify(secret: string): Promise<KeyVerification>;
    /** The key a verified client certificate (SHA-256 of its DER) is bound to. */
    verifyClientCertificate(fingerprint: string): Promise<KeyVerification>;
  };
  /** Null when no WAYMARK_STREAM_TOKEN_SECRET is set: no stream token verifies. */
  streamTokens: StreamTokens | null;
  /** Reflection without credentials (WAYMARK_REFLECTION_PUBLIC). */
  reflectionPublic: boolean;
  /** Whether a run exists in a namespace: read only when refusing a missing scope. */
  runVisible(params: { namespace: string; runId: string }): Promise<boolean>;
  /** The namespace of a request that names none, for an admin key. */
  defaultNamespace: string;
}

type Detail = NonNullable<ConstructorParameters<typeof ConnectError>[3]>[number];
const info = (reason: string, metadata: Record<string, string> = {}): Detail => ({ desc: ErrorInfoSchema, value: { reason, domain: ERROR_DOMAIN, metadata } });

const unauthenticated = (reason: string, message: string, metadata: Record<string, string> = {}): ConnectError =>
  new ConnectError(message, Code.Unauthenticated, undefined, [info(reason, metadata)]);

const REFUSED = {
  missing: () => unauthenticated('CREDENTIALS_MISSING', 'this call needs credentials: send "authorization: Bearer <API key>" (docs/security.md)'),
  malformed: () => unauthenticated('CREDENTIALS_MALFORMED', 'the authorization header is not "Bearer <API key>" or "Bearer <stream token>" (API keys start with wmk_, stream tokens with wms_)'),
  invalid: () => unauthenticated('CREDENTIALS_INVALID', 'the API key or stream token is not valid; check it, or create a key with `waymark keys create`'),
  revoked: (keyId: string) => unauthenticated('KEY_REVOKED', `API key ${keyId} was revoked; use another key`, { key_id: keyId }),
  expired: () => unauthenticated('TOKEN_EXPIRED', 'the stream token expired; mint a new one with CreateStreamToken'),
  unbound: (fingerprint: string) => unauthenticated(
    'CERTIFICATE_NOT_BOUND',
    'the client certificate is bound to no API key: send "authorization: Bearer <API key>", or bind it with `waymark keys create --client-cert FILE` (docs/security.md)',
    { fingerprint_sha256: fingerprint },
  ),
};

/** How a stream opened with a stream token ends when the token expires (run-events-stream.ts). */
export const tokenExpiredError = (): ConnectError => REFUSED.expired();

function scopeMissing(scope: string, rpc: string, key: ApiKey, admin: boolean): ConnectError {
  const what = admin ? `an admin key (no namespace) with the "${scope}" scope` : `the "${scope}" scope`;
  return new ConnectError(`${rpc} needs ${what}; API key ${key.id} does not have it`, Code.PermissionDenied, undefined, [
    info('SCOPE_MISSING', { scope, key_id: key.id, rpc }),
  ]);
}

function tokenScope(rpc: string): ConnectError {
  return new ConnectError(
    `a stream token allows StreamRunEvents and GetRun of its own run only, not ${rpc} or another run; use an API key`,
    Code.PermissionDenied, undefined, [info('TOKEN_SCOPE', { rpc })],
  );
}

function namespaceNotFound(namespace: string): ConnectError {
  return new ConnectError(`namespace "${namespace}" was not found for this API key; omit namespace to use the key's own`, Code.NotFound, undefined, [
    info('NAMESPACE_NOT_FOUND', { namespace }),
    { desc: ResourceInfoSchema, value: { resourceType: 'waymark.v1.Namespace', resourceName: namespace, description: 'not visible to this key' } },
  ]);
}

const BEARER = /^Bearer +([\x21-\x7e]{1,2048})$/i;

type RequestFields = { namespace?: unknown; runId?: unknown; id?: unknown };

/** The run (and approval) a request addresses, for the NOT_FOUND-before-PERMISSION_DENIED rule. */
function addressed(message: RequestFields): { runId: string; notFound: ConnectError } | null {
  if (typeof message.runId === 'string' && message.runId !== '') return { runId: message.runId, notFound: domainStatus(new RunNotFoundError(message.runId))! };
  if (typeof message.id === 'string' && message.id !== '') {
    return { runId: message.id.split(':', 1)[0]!, notFound: domainStatus(new ApprovalNotFoundError(message.id))! };
  }
  return null;
}

export function authInterceptor(options: AuthOptions): Interceptor {
  const authenticate = async (header: string | null, certificate: ClientCertificate | undefined): Promise<Caller> => {
    if ((header === null || header === '') && certificate) {
      const v = await options.keys.verifyClientCertificate(certificate.fingerprint256);
      if (v.ok) return { kind: 'key', key: v.key };
      // The holder of the certificate's private key proved possession: like a bearer of the real secret, it may learn of the revocation.
      if (v.why === 'revoked') throw REFUSED.revoked(v.keyId);
      throw REFUSED.unbound(certificate.fingerprint256);
    }
    if (header === null || header === '') throw REFUSED.missing();
    const credential = BEARER.exec(header)?.[1];
    if (!credential) throw REFUSED.malformed();
    if (isStreamToken(credential)) {
      const v = options.streamTokens?.verify(credential) ?? { ok: false, why: 'invalid' as const };
      if (!v.ok) throw v.why === 'expired' ? REFUSED.expired() : v.why === 'malformed' ? REFUSED.malformed() : REFUSED.invalid();
      return { kind: 'stream-token', namespace: v.namespace, runId: v.runId, expiresAt: v.expiresAt };
    }
    const v = await options.keys.verify(credential);
    if (v.ok) return { kind: 'key', key: v.key };
    if (v.why === 'revoked') throw REFUSED.revoked(v.keyId);
    throw v.why === 'malformed' ? REFUSED.malformed() : REFUSED.invalid();
  };

  return (next) => async (req) => {
    const rpc = `${req.service.typeName}/${req.method.name}`;
    const rule = ACCESS_RULES[rpc];
    // Fail closed: a service registered without a rule is a bug, answered INTERNAL (and logged).
    if (rule === undefined) throw new Error(`no access rule for ${rpc} in src/server/auth/access-rules.ts`);
    if (rule === 'public' || (rule === 'reflection' && options.reflectionPublic)) return next(req);
    const caller = await authenticate(req.header.get('authorization'), req.contextValues.get(clientCertificateKey));
    req.contextValues.set(callerKey, caller);
    if (rule === 'reflection') {
      if (caller.kind !== 'key') throw tokenScope(req.method.name);
      return next(req);
    }

    // The request message: decoded already for a unary call; a server stream's first (only) message is read here.
    let message: RequestFields;
    let forward = req;
    if (req.stream) {
      const it = req.message[Symbol.asyncIterator]();
      const first = await it.next();
      if (first.done) return next(req);
      message = first.value as RequestFields;
      forward = { ...req, message: (async function* () { yield first.value; yield* { [Symbol.asyncIterator]: () => it }; })() };
    } else {
      message = req.message as RequestFields;
    }
    const named = typeof message.namespace === 'string' ? message.namespace : '';

    if (caller.kind === 'stream-token') {
      if (!rule.streamToken || (named !== '' && named !== caller.namespace) || message.runId !== caller.runId) throw tokenScope(req.method.name);
      message.namespace = caller.namespace;
      return next(forward);
    }
    if (caller.kind !== 'key') return next(forward);
    const { key } = caller;
    if (rule.admin) {
      if (key.namespace !== null || !key.scopes.includes(rule.scope)) throw scopeMissing(rule.scope, req.method.name, key, true);
      return next(forward);
    }
    if (key.namespace !== null) {
      if (named === '') message.namespace = key.namespace;
      else if (named !== key.namespace) throw namespaceNotFound(named);
    }
    if (!key.scopes.includes(rule.scope)) {
      const target = addressed(message);
      const namespace = typeof message.namespace === 'string' && message.namespace !== '' ? message.namespace : options.defaultNamespace;
      if (target && !(await options.runVisible({ namespace, runId: target.runId }))) throw target.notFound;
      throw scopeMissing(rule.scope, req.method.name, key, false);
    }
    return next(forward);
  };
}

/**
 * For a listener that serves only public RPCs (the health-only port): every credential is refused,
 * so if a non-public service were ever registered on it, it would answer nothing.
 */
export function publicOnlyAuth(defaultNamespace: string): AuthOptions {
  return {
    keys: { verify: async () => ({ ok: false, why: 'invalid' }), verifyClientCertificate: async () => ({ ok: false, why: 'invalid' }) }, streamTokens: null, reflectionPublic: false, defaultNamespace,
    runVisible: async () => false,
  };
}
