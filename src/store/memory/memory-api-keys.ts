import { ClientCertificateTakenError } from '../../journal/errors.js';
import type {
  ApiKeyCreateParams, ApiKeyGetByClientCertParams, ApiKeyGetParams, ApiKeyListParams, ApiKeyRecord, ApiKeyRevokeParams,
} from '../store.js';
import { compare } from './memory-run-table.js';

/* The memory store's API keys (ApiKeyOps in api-key-params.ts documents each method). */
export class MemoryApiKeys {
  private readonly apiKeys = new Map<string, ApiKeyRecord>();

  constructor(private readonly now: () => Date) {}

  async apiKeyCreate(params: ApiKeyCreateParams): Promise<ApiKeyRecord> {
    if (this.apiKeys.has(params.id)) throw new Error(`API key id ${params.id} is taken`);
    const cert = params.clientCertSha256 ?? null;
    if (cert !== null && [...this.apiKeys.values()].some((k) => k.clientCertSha256 === cert)) throw new ClientCertificateTakenError(cert);
    const key: ApiKeyRecord = { ...structuredClone(params), clientCertSha256: cert, createdAt: this.now(), revokedAt: null };
    this.apiKeys.set(key.id, key);
    return structuredClone(key);
  }
  async apiKeyGet(params: ApiKeyGetParams): Promise<ApiKeyRecord | null> {
    const key = this.apiKeys.get(params.id);
    return key ? structuredClone(key) : null;
  }
  async apiKeyGetByClientCert(params: ApiKeyGetByClientCertParams): Promise<ApiKeyRecord | null> {
    const key = [...this.apiKeys.values()].find((k) => k.clientCertSha256 === params.clientCertSha256);
    return key ? structuredClone(key) : null;
  }
  async apiKeyList(params: ApiKeyListParams): Promise<ApiKeyRecord[]> {
    return [...this.apiKeys.values()]
      .filter((k) => (params.namespace === undefined || k.namespace === params.namespace) && (params.includeRevoked || k.revokedAt === null))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || compare(b.id, a.id))
      .map((k) => structuredClone(k));
  }
  async apiKeyRevoke(params: ApiKeyRevokeParams): Promise<ApiKeyRecord | null> {
    const key = this.apiKeys.get(params.id);
    if (!key) return null;
    key.revokedAt ??= this.now();
    return structuredClone(key);
  }}
