import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { RestartableServer, startChargeSink } from '../../../test/support/restartable-server.js';
import { createWaymarkClient, RunStatus, Unavailable, type ReconnectInfo, type RunEvent, type WaymarkClient } from '../src/index.js';

// The give-up window of an event stream (docs/clients.md "Event streams"): a follower of a parked
// run sees no events, so only a successful reconnect may stop its give-up clock. Two restarts of
// a real `waymark server` further apart than the window must not end the stream. Before the fix
// the clock ran from the first restart on, and the second restart ended the stream at once.

let db: TestDatabase;
let server: RestartableServer;
let sink: Awaited<ReturnType<typeof startChargeSink>>;
let startupMs = 0;

beforeAll(async () => {
  db = await createTestDatabase('waymark_ts_give_up');
  sink = await startChargeSink();
  server = new RestartableServer({ DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url });
  const started = Date.now();
  await server.start();
  startupMs = Date.now() - started;
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await sink?.close();
  await db?.drop();
});

function statusOf(event: RunEvent | undefined): RunStatus | undefined {
  return event?.body.case === 'statusChanged' ? event.body.value.status : undefined;
}

async function toArray<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('events() give-up window', () => {
  it('follows a parked run through two restarts further apart than the window, then sees it finish with no gap and no repeat', { timeout: 420_000 }, async () => {
    // The window must outlast one restart (the server is down meanwhile) but be shorter than the
    // gap between the two: a few seconds, more on a slow machine (a first start includes migrations).
    // A warm-up restart measures how long the server is down on this machine now.
    const warmUp = Date.now();
    await server.restart({ signal: 'SIGTERM' });
    const windowMs = Math.max(3_000, 2 * startupMs, 3 * (Date.now() - warmUp));
    const client: WaymarkClient = createWaymarkClient({ address: server.address, retry: { initialMs: 50, maxMs: 500, streamGiveUpMs: windowMs } });
    try {
      const { run } = await client.startRun('refund', { order: 'give-up-1', amount: 7 }, { wait: true, timeoutMs: 60_000 });
      expect(run.status).toBe(RunStatus.SUSPENDED);

      const events: RunEvent[] = [];
      const reconnects: ReconnectInfo[] = [];
      let reconnected: () => void = () => undefined;
      const follower = (async () => {
        for await (const event of client.events(run.id, {
          followSuspended: true,
          onReconnect: (info) => {
            reconnects.push(info);
            reconnected();
          },
        })) events.push(event);
      })();
      const nextReconnect = () => new Promise<void>((resolve) => (reconnected = resolve));
      const ended = follower.then(() => 'ended', (err: unknown) => err);
      // The history up to the park arrives first.
      await expect.poll(() => statusOf(events.at(-1)), { timeout: 30_000 }).toBe(RunStatus.SUSPENDED);

      for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
        const before = reconnects.length;
        const first = nextReconnect();
        await server.restart({ signal });
        const outcome = await Promise.race([first.then(() => 'reconnected'), ended]);
        expect(outcome, `the stream ended after the ${signal} restart instead of reconnecting`).toBe('reconnected');
        // Back up, and further from the previous failure than the window, before anything else happens.
        await new Promise((resolve) => setTimeout(resolve, windowMs + 1_000));
        expect(await Promise.race([ended, 'following']), `the stream gave up after the ${signal} restart`).toBe('following');
        expect(reconnects.length).toBeGreaterThan(before);
      }
      expect(reconnects[0]!.attempt).toBe(1);
      expect(reconnects[0]!.error).toBeInstanceOf(Unavailable);
      expect(reconnects.every((r) => r.afterSeq === events.at(-1)!.seq)).toBe(true);

      const [approval] = await toArray(client.listApprovals({ runId: run.id }));
      await client.approve(approval!.id, { by: 'give-up-test' });
      expect(await ended).toBe('ended');

      const seqs = events.map((e) => e.seq);
      const journal = await toArray(client.journal(run.id));
      expect(seqs, 'every journal entry exactly once, in order').toEqual(journal.map((e) => e.seq));
      expect(statusOf(events.at(-1))).toBe(RunStatus.SUCCEEDED);
      expect(server.restarts).toBe(3);
    } finally {
      client.close();
    }
  });
});
