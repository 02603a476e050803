import { expect, it } from 'vitest';
import { ClientCertificateTakenError } from '../../src/journal/errors.js';
import type { ApiKeyCreateParams } from '../../src/store/store.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * API keys (docs/security.md "API keys"): stored with the hash of their secret, found by id,
 * listed newest first by namespace (null: admin keys), revoked once and kept; found by the
 * fingerprint of the client certificate bound to them, which no second key may take.
 */

function key(id: string, overrides: Partial<ApiKeyCreateParams> = {}): ApiKeyCreateParams {
  return { id, name: `key ${id}`, namespace: 'ns-a', scopes: ['runs:read'], secretHash: `hash-${id}`, createdByKeyId: null, ...overrides };
}

export function apiKeysSection({ h }: SuiteContext): void {
  it('a created key is found by id with every field, its times on the store clock; an unknown id is null', async () => {
    const { store } = h();
    const before = await store.clockNow();
    const created = await store.apiKeyCreate(key('k1', { scopes: ['runs:read', 'approvals:decide'], createdByKeyId: 'k0' }));
    expect(created).toMatchObject({
      id: 'k1', name: 'key k1', namespace: 'ns-a', scopes: ['runs:read', 'approvals:decide'], secretHash: 'hash-k1', revokedAt: null, createdByKeyId: 'k0',
    });
    expect(created.createdAt.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1);
    expect(await store.apiKeyGet({ id: 'k1' })).toEqual(created);
    expect(await store.apiKeyGet({ id: 'nope' })).toBeNull();
    // An admin key has no namespace.
    expect((await store.apiKeyCreate(key('k2', { namespace: null, scopes: ['admin'] }))).namespace).toBeNull();
  });

  it('a key with a client certificate is found by its fingerprint, revoked or not; a key without one has null; an unknown fingerprint is null', async () => {
    const { store } = h();
    const fp = 'ab'.repeat(32);
    const bound = await store.apiKeyCreate(key('c1', { clientCertSha256: fp }));
    expect(bound.clientCertSha256).toBe(fp);
    expect((await store.apiKeyCreate(key('c2'))).clientCertSha256).toBeNull();
    expect(await store.apiKeyGetByClientCert({ clientCertSha256: fp })).toEqual(bound);
    expect(await store.apiKeyGetByClientCert({ clientCertSha256: 'cd'.repeat(32) })).toBeNull();
    const revoked = await store.apiKeyRevoke({ id: 'c1' });
    expect(await store.apiKeyGetByClientCert({ clientCertSha256: fp })).toEqual(revoked);
  });

  it('a certificate bound to a key, even a revoked one, is refused for another key (ClientCertificateTakenError), which is not created', async () => {
    const { store } = h();
    const fp = 'ef'.repeat(32);
    await store.apiKeyCreate(key('t1', { clientCertSha256: fp }));
    await store.apiKeyRevoke({ id: 't1' });
    const taken = store.apiKeyCreate(key('t2', { clientCertSha256: fp }));
    await expect(taken).rejects.toBeInstanceOf(ClientCertificateTakenError);
    await expect(taken).rejects.toMatchObject({ fingerprint: fp });
    expect(await store.apiKeyGet({ id: 't2' })).toBeNull();
    expect((await store.apiKeyGetByClientCert({ clientCertSha256: fp }))?.id).toBe('t1');
  });

  it('an id already taken is refused and the first key is unchanged', async () => {
    const { store } = h();
    const first = await store.apiKeyCreate(key('dup'));
    await expect(store.apiKeyCreate(key('dup', { secretHash: 'other' }))).rejects.toThrow();
    expect(await store.apiKeyGet({ id: 'dup' })).toEqual(first);
  });

  it('lists newest first, by namespace (null: admin keys only), revoked keys only when asked', async () => {
    const { store, advance } = h();
    await store.apiKeyCreate(key('a1'));
    await advance(1_000);
    await store.apiKeyCreate(key('b1', { namespace: 'ns-b' }));
    await advance(1_000);
    await store.apiKeyCreate(key('adm', { namespace: null, scopes: ['admin'] }));
    await advance(1_000);
    await store.apiKeyCreate(key('a2'));
    await store.apiKeyRevoke({ id: 'a1' });
    const ids = async (p: Parameters<typeof store.apiKeyList>[0]) => (await store.apiKeyList(p)).map((k) => k.id);
    expect(await ids({ includeRevoked: false })).toEqual(['a2', 'adm', 'b1']);
    expect(await ids({ includeRevoked: true })).toEqual(['a2', 'adm', 'b1', 'a1']);
    expect(await ids({ namespace: 'ns-a', includeRevoked: true })).toEqual(['a2', 'a1']);
    expect(await ids({ namespace: null, includeRevoked: false })).toEqual(['adm']);
    expect(await ids({ namespace: 'ns-none', includeRevoked: true })).toEqual([]);
  });

  it('revoking sets revokedAt once and keeps the key; an unknown id is null', async () => {
    const { store, advance } = h();
    await store.apiKeyCreate(key('r1'));
    const revoked = await store.apiKeyRevoke({ id: 'r1' });
    expect(revoked?.revokedAt).toBeInstanceOf(Date);
    await advance(5_000);
    // Again, 5 s later: the first revocation time stands (a second one would be about now).
    const again = await store.apiKeyRevoke({ id: 'r1' });
    expect(again!.revokedAt!.getTime()).toBeLessThan((await store.clockNow()).getTime() - 4_000);
    expect(await store.apiKeyGet({ id: 'r1' })).toEqual(again);
    expect(again?.secretHash).toBe('hash-r1');
    expect(await store.apiKeyRevoke({ id: 'nope' })).toBeNull();
  });
}
