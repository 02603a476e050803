import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEntry } from '../../src/journal/journal-entry.js';
import { migrate } from '../../src/store/postgres/migrate.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/*
 * What one journal read hands back shares what its rows repeat (journal-queries.ts Interner): a
 * resume holds up to 100,000 entries, and one Date per entry was about 10 MB of them. The entries
 * of one append share their commit's Date; entries of different appends keep their own times.
 */

let db: TestDatabase;
let store: PostgresStore;

beforeAll(async () => {
  db = await createTestDatabase();
  store = await PostgresStore.connect({ url: db.url, applicationName: 'journal-read' });
  await migrate({ pool: store.pool });
});

afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('journalList', () => {
  it('entries of one append share one Date; each append keeps its own time', async () => {
    const lease = (await store.runCreate({
      namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null,
      leaseFor: { holder: 'journal-read', ttlMs: 30_000 },
    })).lease!;
    const step = (name: string) => newEntry({ kind: 'step', name, status: 'ok', payload: name });
    await store.journalAppend({ lease, entries: [step('a'), step('b'), step('c')] });
    await new Promise((resolve) => setTimeout(resolve, 5)); // the next commit's now() is later
    await store.journalAppend({ lease, entries: [step('d'), step('e')] });
    const entries = (await store.journalList({ runId: lease.runId })).filter((e) => e.kind === 'step');
    expect(entries.map((e) => e.name)).toEqual(['a', 'b', 'c', 'd', 'e']);
    const [a, b, c, d, e] = entries as [typeof entries[0], typeof entries[0], typeof entries[0], typeof entries[0], typeof entries[0]];
    expect(b.createdAt).toBe(a.createdAt);
    expect(c.createdAt).toBe(a.createdAt);
    expect(e.createdAt).toBe(d.createdAt);
    expect(d.createdAt).not.toBe(a.createdAt);
    expect(d.createdAt.getTime()).toBeGreaterThan(a.createdAt.getTime());
    // Two reads share nothing: a caller's entries are its own.
    const again = await store.journalList({ runId: lease.runId });
    expect(again.find((x) => x.name === 'a')!.createdAt).not.toBe(a.createdAt);
    expect(again.find((x) => x.name === 'a')!.createdAt).toEqual(a.createdAt);
  });
});
