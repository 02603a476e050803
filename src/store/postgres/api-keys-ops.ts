import type {
  ApiKeyCreateParams, ApiKeyGetByClientCertParams, ApiKeyGetParams, ApiKeyListParams, ApiKeyRecord, ApiKeyRevokeParams,
} from '../api-key-params.js';
import * as akq from './api-keys-queries.js';
import type { PgAccess } from './pg-access.js';

/* PostgresStore's API keys (ApiKeyOps in api-key-params.ts documents each). */

export async function apiKeyCreate(db: PgAccess, params: ApiKeyCreateParams): Promise<ApiKeyRecord> {
  return akq.toApiKey((await db.query<akq.ApiKeyRow>(akq.apiKeyInsert(params), { clientCertSha256: params.clientCertSha256 ?? null })).rows[0]!);
}

export async function apiKeyGet(db: PgAccess, params: ApiKeyGetParams): Promise<ApiKeyRecord | null> {
  const row = (await db.query<akq.ApiKeyRow>(akq.apiKeySelect(params.id))).rows[0];
  return row ? akq.toApiKey(row) : null;
}

export async function apiKeyGetByClientCert(db: PgAccess, params: ApiKeyGetByClientCertParams): Promise<ApiKeyRecord | null> {
  const row = (await db.query<akq.ApiKeyRow>(akq.apiKeySelectByClientCert(params.clientCertSha256))).rows[0];
  return row ? akq.toApiKey(row) : null;
}

export async function apiKeyList(db: PgAccess, params: ApiKeyListParams): Promise<ApiKeyRecord[]> {
  return (await db.query<akq.ApiKeyRow>(akq.apiKeyList(params))).rows.map(akq.toApiKey);
}

export async function apiKeyRevoke(db: PgAccess, params: ApiKeyRevokeParams): Promise<ApiKeyRecord | null> {
  const row = (await db.query<akq.ApiKeyRow>(akq.apiKeyRevoke(params.id))).rows[0];
  return row ? akq.toApiKey(row) : null;
}
