import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunNotFoundError, StoreUnavailableError } from '../../src/journal/errors.js';
import { openStore, storeKindFor, STORE_KINDS, UnknownStoreError } from '../../src/store/open-store.js';
import { migrationNames } from '../../src/store/postgres/migrate.js';
import type { OpenedStore } from '../../src/store/store-kind.js';
import { runParams } from '../conformance/harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/* openStore: the composition root's one way to a store (docs/store.md "Opening a store"). */

describe('picking the kind', () => {
  it('reads the kind from the URL scheme, case-insensitively', () => {
    expect(storeKindFor('postgres://u:p@h/db')?.name).toBe('postgres');
    expect(storeKindFor('postgresql://h/db')?.name).toBe('postgres');
    expect(storeKindFor('POSTGRES://h/db')?.name).toBe('postgres');
    expect(storeKindFor('memory:')?.name).toBe('memory');
    expect(storeKindFor('mysql://root:secret@db/x')).toBeNull();
    expect(storeKindFor('no scheme at all')).toBeNull();
  });

  it('refuses a URL no kind opens, naming its scheme and what is expected but never the URL', async () => {
    const opening = openStore({ url: 'mysql://root:secret@db/x' });
    await expect(opening).rejects.toBeInstanceOf(UnknownStoreError);
    const err = (await opening.catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('"mysql:"');
    expect(err.message).toContain('postgres://');
    expect(err.message).not.toContain('secret');
  });

  it('every kind names its schemes once', () => {
    const schemes = STORE_KINDS.flatMap((k) => k.schemes);
    expect(new Set(schemes).size).toBe(schemes.length);
    for (const scheme of schemes) expect(scheme).toMatch(/^[a-z][a-z0-9+.-]*:$/);
  });
});

describe('memory:', () => {
  it('opens a fresh, working store per call, with an admin side that has nothing to migrate', async () => {
    const a = await openStore({ url: 'memory:', limits: { journalEntries: 7 } });
    const b = await openStore({ url: 'memory:' });
    try {
      expect(a.kind).toBe('memory');
      const { run } = await a.store.runCreate(runParams());
      expect((await a.store.runGet({ runId: run.id, namespace: 'default' })).id).toBe(run.id);
      await expect(b.store.runGet({ runId: run.id, namespace: 'default' })).rejects.toBeInstanceOf(RunNotFoundError);
      await expect(a.admin.ping()).resolves.toBeUndefined();
      expect(await a.admin.migrate()).toEqual({ applied: [] });
      expect(await a.admin.schemaStatus()).toEqual({ ok: true, applied: [], pending: [], unknown: [] });
    } finally {
      await a.admin.close();
      await b.admin.close();
    }
  });
});

describe('postgres://', () => {
  let db: TestDatabase;
  let opened: OpenedStore | undefined;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_open_store');
  });
  afterAll(async () => {
    await opened?.admin.close();
    await db?.drop();
  });

  it('opens the store and an admin side that migrates, pings and reports the schema; close closes both', async () => {
    opened = await openStore({ url: db.url, applicationName: 'open-store-test', poolSize: 2 });
    const { store, admin } = opened;
    expect(opened.kind).toBe('postgres');
    const names = await migrationNames();
    expect(await admin.schemaStatus()).toEqual({ ok: false, applied: [], pending: names, unknown: [] });
    await expect(admin.ping()).resolves.toBeUndefined();
    expect(await admin.migrate()).toEqual({ applied: names });
    expect(await admin.migrate()).toEqual({ applied: [] });
    expect(await admin.schemaStatus()).toEqual({ ok: true, applied: names, pending: [], unknown: [] });

    const { run } = await store.runCreate(runParams());
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).status).toBe('PENDING');

    await admin.close();
    await expect(store.runGet({ runId: run.id, namespace: 'default' })).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(admin.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    opened = undefined;
  });

  it('a database that refuses connections is StoreUnavailableError, and nothing stays open', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const url = new URL(db.url);
    url.port = String(port);
    await expect(openStore({ url: url.toString() })).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
