import type pg from 'pg';
import type { ApiKeyCreateParams, ApiKeyListParams, ApiKeyRecord } from '../store.js';

/*
 * Named statements on `api_keys` (migrations 0009, 0011): API keys, stored as the SHA-256 of their
 * secret, with the fingerprint of a bound client certificate (docs/security.md). Times are the
 * database clock's.
 */

const COLUMNS = 'id, name, namespace, scopes, secret_sha256, created_at, revoked_at, created_by_key_id, client_cert_sha256';

export function apiKeyInsert(p: ApiKeyCreateParams): pg.QueryConfig {
  return {
    name: 'api_keys_insert',
    text: `INSERT INTO api_keys (id, name, namespace, scopes, secret_sha256, created_at, created_by_key_id, client_cert_sha256)
      VALUES ($1, $2, $3, $4::text[], $5, clock_timestamp(), $6, $7) RETURNING ${COLUMNS}`,
    values: [p.id, p.name, p.namespace, p.scopes, p.secretHash, p.createdByKeyId, p.clientCertSha256 ?? null],
  };
}

export function apiKeySelectByClientCert(fingerprint: string): pg.QueryConfig {
  return { name: 'api_keys_select_by_client_cert', text: `SELECT ${COLUMNS} FROM api_keys WHERE client_cert_sha256 = $1`, values: [fingerprint] };
}

export function apiKeySelect(id: string): pg.QueryConfig {
  return { name: 'api_keys_select', text: `SELECT ${COLUMNS} FROM api_keys WHERE id = $1`, values: [id] };
}

export function apiKeyList(p: ApiKeyListParams): pg.QueryConfig {
  // $1: filter by namespace at all; $2: the namespace (NULL: admin keys); $3: revoked ones too.
  return {
    name: 'api_keys_list',
    text: `SELECT ${COLUMNS} FROM api_keys
      WHERE (NOT $1::boolean OR namespace IS NOT DISTINCT FROM $2::text) AND ($3::boolean OR revoked_at IS NULL)
      ORDER BY created_at DESC, id DESC`,
    values: [p.namespace !== undefined, p.namespace ?? null, p.includeRevoked],
  };
}

export function apiKeyRevoke(id: string): pg.QueryConfig {
  return {
    name: 'api_keys_revoke',
    text: `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, clock_timestamp()) WHERE id = $1 RETURNING ${COLUMNS}`,
    values: [id],
  };
}

export interface ApiKeyRow {
  id: string; name: string; namespace: string | null; scopes: string[]; secret_sha256: string;
  created_at: Date; revoked_at: Date | null; created_by_key_id: string | null; client_cert_sha256: string | null;
}

export function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id, name: row.name, namespace: row.namespace, scopes: row.scopes, secretHash: row.secret_sha256,
    createdAt: row.created_at, revokedAt: row.revoked_at, createdByKeyId: row.created_by_key_id, clientCertSha256: row.client_cert_sha256,
  };
}
