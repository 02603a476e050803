import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { RestartableServer, startChargeSink } from '../../../test/support/restartable-server.js';
import { TcpBalancer } from '../../../test/support/tcp-balancer.js';
import { createWaymarkClient, RunStatus, type WaymarkClient } from '../src/index.js';

// Decisions sent while two replicas of `waymark server` restart one after the other (SIGTERM,
// as a Kubernetes rollout does) behind a layer-4 balancer, through one client with the default
// retry policy (docs/clients.md): every decision must be applied once and every run finish. The
// balancer hands some connections to the replica that is down; the client retries those.

const RUNS = 8;
let db: TestDatabase;
let replicas: RestartableServer[];
let balancer: TcpBalancer;
let sink: Awaited<ReturnType<typeof startChargeSink>>;

beforeAll(async () => {
  db = await createTestDatabase('waymark_ts_rolling');
  sink = await startChargeSink();
  replicas = [0, 1].map(() => new RestartableServer({ DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url }));
  for (const r of replicas) await r.start(); // one after the other: the first migrates
  balancer = new TcpBalancer(() => replicas.map((r) => r.address));
  await balancer.start();
}, 180_000);

afterAll(async () => {
  await balancer?.stop();
  for (const r of replicas ?? []) await r.stop();
  await sink?.close();
  await db?.drop();
});

describe('a rolling restart of two replicas', () => {
  it('applies every decision sent during it, once, and every run finishes', { timeout: 300_000 }, async () => {
    const client: WaymarkClient = createWaymarkClient({ address: balancer.address });
    try {
      const approvals: string[] = [];
      const runIds: string[] = [];
      for (let i = 0; i < RUNS; i++) {
        const started = await client.startRun('refund', { order: `rolling-${i}`, amount: i + 1 }, { wait: true, timeoutMs: 60_000 });
        expect(started.run!.status).toBe(RunStatus.SUSPENDED);
        runIds.push(started.run!.id);
        approvals.push(started.waitingOn[0]!.approvalId);
      }

      // The rollout: each replica drains and comes back before the next one goes.
      const windows: Array<[number, number]> = [];
      let rolledOut = false;
      const rollout = (async () => {
        for (const r of replicas) {
          const from = Date.now();
          await r.restart({ signal: 'SIGTERM' });
          windows.push([from, Date.now()]);
        }
        rolledOut = true;
      })();

      // Decisions spread over the rollout: one at a time, a short pause between them.
      const sentAt: number[] = [];
      const outcomes: unknown[] = [];
      for (const id of approvals) {
        sentAt.push(Date.now());
        outcomes.push(await client.approve(id, { by: 'rolling-test' }).then((r) => r.applied, (err: unknown) => err));
        if (!rolledOut) await new Promise((resolve) => setTimeout(resolve, 1_500));
      }
      await rollout;

      expect(outcomes, 'every decision was applied').toEqual(approvals.map(() => true));
      const during = sentAt.filter((t) => windows.some(([from, to]) => t >= from && t <= to)).length;
      expect(during, 'decisions were sent while a replica was restarting').toBeGreaterThanOrEqual(2);

      for (const runId of runIds) {
        await expect.poll(async () => (await client.getRun(runId)).run!.status, { timeout: 60_000, interval: 250 }).toBe(RunStatus.SUCCEEDED);
      }
      for (let i = 0; i < RUNS; i++) expect(sink.charges.get(`rolling-${i}`), `refund rolling-${i} charged once`).toBe(1);
      console.log(`rolling restart: ${during} of ${RUNS} decisions sent during a restart; the balancer refused ${balancer.refused} connections`);
    } finally {
      client.close();
    }
  });
});
