import { describe, expect, it } from 'vitest';
import { ApiKeys, apiKeyId } from '../../src/engine/access/api-keys.js';
import { StreamTokens } from '../../src/engine/access/stream-tokens.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';

/*
 * The engine's access room (engine/access/): the key cache's revocation bound across replicas, and
 * stream tokens (HMAC, expiry, secret rotation). The server-level behaviour is test/server/auth.test.ts.
 */

describe('API keys', () => {
  it('a revocation on one replica reaches another within the cache lifetime, not before; the revoking replica refuses at once', async () => {
    const store = new MemoryStore();
    let now = 0;
    const a = new ApiKeys({ store, cacheMs: 5_000, now: () => now });
    const b = new ApiKeys({ store, cacheMs: 5_000, now: () => now });
    const { secret, key } = await a.create({ name: 'k', namespace: 'ns', scopes: ['runs:read'], createdByKeyId: null });
    expect((await b.verify(secret)).ok).toBe(true);
    expect((await a.verify(secret)).ok).toBe(true);
    await a.revoke(key.id);
    expect(await a.verify(secret)).toEqual({ ok: false, why: 'revoked', keyId: key.id });
    now = 4_999;
    expect((await b.verify(secret)).ok).toBe(true); // the documented window (WAYMARK_AUTH_CACHE_MS)
    now = 5_000;
    expect(await b.verify(secret)).toEqual({ ok: false, why: 'revoked', keyId: key.id });
  });

  it('a bound client certificate verifies as its key; revoked: refused at once here, within the cache lifetime elsewhere; unbound: invalid', async () => {
    const store = new MemoryStore();
    let now = 0;
    const a = new ApiKeys({ store, cacheMs: 5_000, now: () => now });
    const b = new ApiKeys({ store, cacheMs: 5_000, now: () => now });
    const fingerprint = '0f'.repeat(32);
    const { key } = await a.create({ name: 'k', namespace: 'ns', scopes: ['runs:read'], createdByKeyId: null, clientCertSha256: fingerprint });
    expect(await b.verifyClientCertificate(fingerprint)).toMatchObject({ ok: true, key: { id: key.id, namespace: 'ns', clientCertSha256: fingerprint } });
    expect(await a.verifyClientCertificate('1e'.repeat(32))).toEqual({ ok: false, why: 'invalid' });
    expect(await a.verifyClientCertificate('not hex')).toEqual({ ok: false, why: 'malformed' });
    await a.verifyClientCertificate(fingerprint);
    await a.revoke(key.id);
    expect(await a.verifyClientCertificate(fingerprint)).toEqual({ ok: false, why: 'revoked', keyId: key.id });
    now = 4_999;
    expect((await b.verifyClientCertificate(fingerprint)).ok).toBe(true);
    now = 5_000;
    expect(await b.verifyClientCertificate(fingerprint)).toEqual({ ok: false, why: 'revoked', keyId: key.id });
  });

  it('verifies from the cache, one store read per id and lifetime, shared by concurrent calls', async () => {
    const store = new MemoryStore();
    const keys = new ApiKeys({ store, now: () => 0 });
    const { secret } = await keys.create({ name: 'k', namespace: null, scopes: ['admin'], createdByKeyId: null });
    const results = await Promise.all(Array.from({ length: 20 }, () => keys.verify(secret)));
    expect(results.every((r) => r.ok)).toBe(true);
    for (let i = 0; i < 100; i++) await keys.verify(secret);
    expect(keys.storeReads).toBe(1);
  });

  it('refuses malformed secrets without a read, and wrong secrets of a real id; stores only a hash', async () => {
    const store = new MemoryStore();
    const keys = new ApiKeys({ store });
    const { secret, key } = await keys.create({ name: 'k', namespace: 'ns', scopes: ['runs:read'], createdByKeyId: null });
    expect(apiKeyId(secret)).toBe(key.id);
    expect(await keys.verify('wmk_short')).toEqual({ ok: false, why: 'malformed' });
    expect(keys.storeReads).toBe(0);
    expect(await keys.verify(`wmk_${key.id}_${'B'.repeat(43)}`)).toEqual({ ok: false, why: 'invalid' });
    const stored = await store.apiKeyGet({ id: key.id });
    expect(JSON.stringify(stored)).not.toContain(secret.slice(22));
    expect(stored?.secretHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('keeps at most cacheEntries ids (made-up ids do not grow memory without bound)', async () => {
    const store = new MemoryStore();
    const keys = new ApiKeys({ store, cacheEntries: 3, now: () => 0 });
    for (let i = 0; i < 10; i++) await keys.verify(`wmk_${i.toString(16).padStart(16, '0')}_${'x'.repeat(43)}`);
    expect(keys.storeReads).toBe(10);
    // The oldest ids were dropped: verifying the first again reads it again.
    await keys.verify(`wmk_${'0'.repeat(16)}_${'x'.repeat(43)}`);
    expect(keys.storeReads).toBe(11);
  });
});

describe('stream tokens', () => {
  const secret = 's'.repeat(32);

  it('verifies its own tokens until they expire, with the claims it was minted with', () => {
    let now = 1_000_000;
    const tokens = new StreamTokens({ secrets: [secret], now: () => now });
    const { token, expiresAt } = tokens.mint({ namespace: 'ns', runId: 'r1', ttlMs: 60_000 });
    expect(expiresAt.getTime()).toBe(1_060_000);
    expect(tokens.verify(token)).toEqual({ ok: true, namespace: 'ns', runId: 'r1', expiresAt });
    now = 1_060_000;
    expect(tokens.verify(token)).toEqual({ ok: false, why: 'expired' });
  });

  it('refuses an edited payload, another secret\'s signature and garbage', () => {
    const tokens = new StreamTokens({ secrets: [secret] });
    const { token } = tokens.mint({ namespace: 'ns', runId: 'r1', ttlMs: 60_000 });
    const [payload, signature] = token.slice(4).split('.') as [string, string];
    const edited = Buffer.from(Buffer.from(payload, 'base64url').toString().replace('r1', 'r2')).toString('base64url');
    expect(tokens.verify(`wms_${edited}.${signature}`)).toEqual({ ok: false, why: 'invalid' });
    expect(new StreamTokens({ secrets: ['t'.repeat(32)] }).verify(token)).toEqual({ ok: false, why: 'invalid' });
    expect(tokens.verify('wms_nonsense')).toEqual({ ok: false, why: 'malformed' });
  });

  it('rotation: tokens of the old secret verify while it is listed second; new tokens are signed with the first', () => {
    const old = new StreamTokens({ secrets: [secret] });
    const rotated = new StreamTokens({ secrets: ['n'.repeat(32), secret] });
    const before = old.mint({ namespace: 'ns', runId: 'r', ttlMs: 60_000 }).token;
    expect(rotated.verify(before).ok).toBe(true);
    const after = rotated.mint({ namespace: 'ns', runId: 'r', ttlMs: 60_000 }).token;
    expect(old.verify(after).ok).toBe(false);
    expect(new StreamTokens({ secrets: ['n'.repeat(32)] }).verify(after).ok).toBe(true);
  });
});
