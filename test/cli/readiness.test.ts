import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LIVENESS, READINESS, startReadiness, type Readiness } from '../../src/cli/readiness.js';
import { HealthStatus, OVERALL } from '../../src/server/routes/health-service.js';
import { openStore } from '../../src/store/open-store.js';
import type { StoreAdmin } from '../../src/store/store-kind.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const logger = pino({ level: 'silent' });
let db: TestDatabase;
let admin: StoreAdmin;
const started: Readiness[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_readiness');
  ({ admin } = await openStore({ url: db.url, applicationName: 'readiness-test', poolSize: 1 }));
});

afterAll(async () => {
  await Promise.all(started.map((r) => r.stop()));
  await admin?.close();
  await db?.drop();
});

function start(health: HealthStatus, intervalMs = 60_000, a = admin): Readiness {
  const r = startReadiness({ health, admin: a, logger, intervalMs });
  started.push(r);
  return r;
}

const statuses = (health: HealthStatus) => ({
  readiness: health.get(READINESS),
  overall: health.get(OVERALL),
  liveness: health.get(LIVENESS),
});

it('is not ready until every migration is applied, then ready; liveness never waits for the database', async () => {
  const health = new HealthStatus();
  const readiness = start(health);
  // Before any check has finished, the process must not look ready (the constructor said SERVING).
  expect(statuses(health)).toEqual({ readiness: 'NOT_SERVING', overall: 'NOT_SERVING', liveness: 'SERVING' });

  const before = await readiness.checkNow();
  expect(before.ready).toBe(false);
  expect(before.reason).toMatch(/migrations pending: 0001_init\.sql/);
  expect(statuses(health)).toEqual({ readiness: 'NOT_SERVING', overall: 'NOT_SERVING', liveness: 'SERVING' });

  await admin.migrate();
  expect(await readiness.checkNow()).toEqual({ ready: true });
  expect(statuses(health)).toEqual({ readiness: 'SERVING', overall: 'SERVING', liveness: 'SERVING' });
});

it('re-checks on its own: becomes ready without being asked once the schema is there', async () => {
  const other = await createTestDatabase('waymark_readiness');
  const { admin: otherAdmin } = await openStore({ url: other.url, applicationName: 'readiness-test', poolSize: 1 });
  try {
    const health = new HealthStatus();
    const readiness = start(health, 20, otherAdmin);
    expect((await readiness.checkNow()).ready).toBe(false);
    await otherAdmin.migrate();
    // Wait on the health status changing (an event), not on time.
    while (health.get(READINESS) !== 'SERVING') await health.nextChange();
    expect(health.get(OVERALL)).toBe('SERVING');
    await readiness.stop();
  } finally {
    await otherAdmin.close();
    await other.drop();
  }
});

it('goes NOT_SERVING when the database stops answering, keeping liveness SERVING', async () => {
  const other = await createTestDatabase('waymark_readiness');
  // The store's pools keep an error listener: the dropped database terminates their idle connections.
  const { admin: otherAdmin } = await openStore({ url: other.url, applicationName: 'readiness-test', poolSize: 1 });
  try {
    await otherAdmin.migrate();
    const health = new HealthStatus();
    const readiness = start(health, 60_000, otherAdmin);
    expect((await readiness.checkNow()).ready).toBe(true);
    await other.drop();
    const report = await readiness.checkNow();
    expect(report.ready).toBe(false);
    expect(report.reason).toMatch(/^database does not answer: /);
    expect(statuses(health)).toEqual({ readiness: 'NOT_SERVING', overall: 'NOT_SERVING', liveness: 'SERVING' });
  } finally {
    await otherAdmin.close();
    await other.drop();
  }
});

it('drain() turns readiness off for good, whatever the database says', async () => {
  await admin.migrate();
  const health = new HealthStatus();
  const readiness = start(health);
  expect((await readiness.checkNow()).ready).toBe(true);
  readiness.drain();
  expect(statuses(health)).toEqual({ readiness: 'NOT_SERVING', overall: 'NOT_SERVING', liveness: 'SERVING' });
  expect(await readiness.checkNow()).toEqual({ ready: false, reason: 'draining' });
  expect(health.get(READINESS)).toBe('NOT_SERVING');
});

it('refuses a nonsensical interval at construction', () => {
  expect(() => startReadiness({ health: new HealthStatus(), admin, logger, intervalMs: 0 })).toThrow(/intervalMs must be a whole number/);
});
