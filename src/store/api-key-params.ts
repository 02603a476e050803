/*
 * API keys as a store holds them (docs/security.md "API keys"): never the secret, only its SHA-256
 * hash; the id is the visible part of the secret, so a verification is one lookup by primary key.
 */

/** One API key row. */
export interface ApiKeyRecord {
  /** The key's public id (the `wmk_<id>_…` part of its secret); primary key. */
  id: string;
  name: string;
  /** The namespace it may address; null for an admin key (every namespace). */
  namespace: string | null;
  /** Scope names (`runs:read`, …), as granted; the store does not interpret them. */
  scopes: string[];
  /** Hex SHA-256 of the whole secret. */
  secretHash: string;
  createdAt: Date;
  /** Set once by apiKeyRevoke; null while active. */
  revokedAt: Date | null;
  /** The key that created it through the API; null for keys created locally (dev, bootstrap). */
  createdByKeyId: string | null;
  /**
   * Hex SHA-256 of the DER client certificate bound to the key (mTLS), or null. Unique over every
   * key, revoked ones included: a second key with a bound certificate fails with
   * ClientCertificateTakenError.
   */
  clientCertSha256: string | null;
}

export type ApiKeyCreateParams = Omit<ApiKeyRecord, 'createdAt' | 'revokedAt' | 'clientCertSha256'> & { clientCertSha256?: string | null };

export interface ApiKeyGetParams {
  id: string;
}

export interface ApiKeyListParams {
  /** Only keys of this namespace; null: only admin keys; absent: every key. */
  namespace?: string | null;
  includeRevoked: boolean;
}

export interface ApiKeyGetByClientCertParams {
  /** Hex SHA-256 of the DER certificate, lowercase. */
  clientCertSha256: string;
}

export interface ApiKeyRevokeParams {
  id: string;
}

/**
 * API keys. Part of JournalStore (store.ts), whose contract holds for each method.
 */
export interface ApiKeyOps {
  /**
   * API keys (docs/security.md). apiKeyCreate stores a new key (createdAt: the store's clock) and
   * returns it. Ids are 64 random bits: one already taken is a bug, and the write fails.
   */
  apiKeyCreate(params: ApiKeyCreateParams): Promise<ApiKeyRecord>;
  /** One key by id, revoked or not; null when there is none. */
  apiKeyGet(params: ApiKeyGetParams): Promise<ApiKeyRecord | null>;
  /** The key (revoked or not) its client certificate is bound to, by fingerprint; null when none is. */
  apiKeyGetByClientCert(params: ApiKeyGetByClientCertParams): Promise<ApiKeyRecord | null>;
  /** Keys newest first (createdAt, then id), revoked ones only with `includeRevoked`. */
  apiKeyList(params: ApiKeyListParams): Promise<ApiKeyRecord[]>;
  /** Sets revokedAt (the store's clock) once; a revoked key is returned unchanged; null for an unknown id. */
  apiKeyRevoke(params: ApiKeyRevokeParams): Promise<ApiKeyRecord | null>;
}
