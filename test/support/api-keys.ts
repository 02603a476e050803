import { ApiKeys, SCOPES, type Scope } from '../../src/engine/access/api-keys.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';

/**
 * Creates an API key straight in a (migrated) database, as `waymark dev` does for its local key:
 * for tests that start `waymark server` processes with WAYMARK_AUTH=on. Default: an admin key.
 */
export async function createApiKey(url: string, options: { namespace?: string | null; scopes?: Scope[]; name?: string } = {}): Promise<{ secret: string; keyId: string }> {
  const store = await PostgresStore.connect({ url, applicationName: 'test-api-keys', poolSize: 1 });
  try {
    const { key, secret } = await new ApiKeys({ store }).create({
      name: options.name ?? 'test key', namespace: options.namespace ?? null, scopes: options.scopes ?? [...SCOPES], createdByKeyId: null,
    });
    return { secret, keyId: key.id };
  } finally {
    await store.close();
  }
}
