import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import { isScope, SCOPES, type ApiKey, type Scope } from '../../engine/index.js';
import { AdminService, ApiKeySchema, type ApiKey as ApiKeyProto } from '../../gen/waymark/v1/admin_service_pb.js';
import type { RouteDeps } from './route-deps.js';
import { callerKey, callerKeyId } from '../auth/auth.js';
import { withErrorMapping } from '../errors/error-mapping.js';
import { RequestCheck } from '../convert/request-validation.js';
import { unimplemented } from './unimplemented.js';

/*
 * waymark.v1.AdminService: API keys (docs/security.md). Who may call it is decided by the auth
 * interceptor (an admin key with the admin scope); each route validates, converts and makes one
 * call to the engine's key store (engine/access/api-keys.ts).
 */

const KEY_ID = /^[0-9a-f]{16}$/;
const FINGERPRINT = /^[0-9a-f]{64}$/;

export function apiKeyToProto(k: ApiKey): ApiKeyProto {
  return create(ApiKeySchema, {
    id: k.id, name: k.name, namespace: k.namespace ?? '', scopes: k.scopes, createTime: timestampFromDate(k.createdAt),
    revokeTime: k.revokedAt ? timestampFromDate(k.revokedAt) : undefined, createdByKeyId: k.createdByKeyId ?? '',
    clientCertSha256: k.clientCertSha256 ?? '',
  });
}

export function adminServiceImpl(deps: RouteDeps): ServiceImpl<typeof AdminService> {
  const { keys } = deps.api;
  // An empty namespace means "every namespace" here, not "default": a placeholder that is never used.
  const check = () => new RequestCheck('');

  return {
    async createKey(req, ctx) {
      const c = check();
      const name = c.text('name', req.name, { max: 256 });
      const namespace = c.namespace(req.namespace) || null;
      const scopes: Scope[] = [];
      if (req.scopes.length === 0) c.fail('scopes', `at least one of ${SCOPES.join(', ')}`);
      req.scopes.forEach((s, i) => {
        if (isScope(s)) scopes.push(s);
        else c.fail(`scopes[${i}]`, `unknown scope "${s.slice(0, 64)}"; one of ${SCOPES.join(', ')}`);
      });
      if (namespace !== null && scopes.includes('admin')) c.fail('scopes', '"admin" is allowed only on a key of every namespace (an empty namespace)');
      const clientCertSha256 = req.clientCertSha256.replace(/:/g, '').toLowerCase() || null;
      if (clientCertSha256 !== null && !FINGERPRINT.test(clientCertSha256)) {
        c.fail('client_cert_sha256', 'must be the SHA-256 of the DER certificate: 64 hex digits (colons allowed)');
      }
      c.done();
      const { key, secret } = await keys.create({ name, namespace, scopes, createdByKeyId: callerKeyId(ctx.values.get(callerKey)), clientCertSha256 });
      return { key: apiKeyToProto(key), secret };
    },

    async listKeys(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      c.done();
      return { keys: (await keys.list({ ...(namespace ? { namespace } : {}), includeRevoked: req.includeRevoked })).map(apiKeyToProto) };
    },

    async revokeKey(req) {
      const c = check();
      if (req.id === '') c.fail('id', 'is required');
      else if (!KEY_ID.test(req.id)) c.fail('id', 'must be a key id: 16 hex digits, the part of a key after "wmk_" (ListKeys shows them)');
      c.done();
      return { key: apiKeyToProto(await keys.revoke(req.id)) };
    },
  };
}

/** The served AdminService: every route, with its errors mapped (error-mapping.ts). */
export function adminService(deps: RouteDeps): ServiceImpl<typeof AdminService> {
  return withErrorMapping(AdminService, adminServiceImpl(deps), deps.logger);
}

/** Registers waymark.v1.AdminService; methods missing from `impl` answer UNIMPLEMENTED. */
export function registerAdminService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof AdminService>> = {}): void {
  router.service(AdminService, { ...unimplemented(AdminService), ...impl });
}
