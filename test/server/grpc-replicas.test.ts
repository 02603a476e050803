import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStatus, type RunEvent } from '../../src/gen/waymark/v1/run_pb.js';
import { RunService, type StreamRunEventsResponse } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { json, plain } from './api-harness.js';
import { grpcJsClient, serverStreamCall, unaryCall, type StreamReader } from './grpc-js-client.js';

/*
 * Real HTTP/2 with an independent client (@grpc/grpc-js), against two `waymark server` processes
 * on one database: a run executing on one replica is followed from the other (NOTIFY wakes the
 * follower; it reads from its own cursor), and a follower that drops reconnects with its last seq.
 */

const WORKFLOWS = 'test/server/fixtures/api-workflows.ts';
const TIMEOUT = 120_000;

let db: TestDatabase;
const replicas: { process: WaymarkProcess; client: grpc.Client }[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_replicas');
  for (let i = 0; i < 2; i++) {
    const process = WaymarkProcess.start(['server'], {
      env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_WORKFLOWS: WORKFLOWS, WAYMARK_SHUTDOWN_GRACE_MS: '5000' },
    });
    replicas.push({ process, client: grpcJsClient(await process.listening()) });
  }
}, TIMEOUT);

afterAll(async () => {
  for (const r of replicas) {
    r.client.close();
    await r.process.stop();
  }
  await db?.drop();
}, TIMEOUT);

const parked = (e: RunEvent) => e.body.case === 'statusChanged' && e.body.value.status === RunStatus.SUSPENDED;

async function tick(client: grpc.Client, runId: string, id: string): Promise<void> {
  const res = await unaryCall(client, SignalService.method.sendSignal, { runId, name: 'tick', payload: json({ n: 1 }), signalId: id });
  expect(res.applied || res.buffered).toBe(true);
}

/** Reads a stream to its end, calling `onEvent` for each event; resolves with the final status. */
async function readAll(reader: StreamReader<StreamRunEventsResponse>, onEvent: (e: RunEvent) => Promise<boolean | void>): Promise<grpc.StatusObject> {
  for (;;) {
    let message: StreamRunEventsResponse;
    try {
      message = await reader.next();
    } catch {
      return reader.status;
    }
    if ((await onEvent(message.event!)) === true) {
      reader.call.cancel();
      return reader.status;
    }
  }
}

describe('two server processes on one database', () => {
  it('stream a run executing on the first from the second, every event in order; a cut stream resumes from its last seq', { timeout: TIMEOUT }, async () => {
    const [a, b] = replicas;
    const ticks = 5;
    const started = await unaryCall(a!.client, RunService.method.startRun, { workflow: 'ticker', input: json({ ticks }), wait: true }, 60_000);
    expect(started.run?.status).toBe(RunStatus.SUSPENDED);
    const runId = started.run!.id;
    const events: RunEvent[] = [];
    let sent = 0;

    // Follow on B; A executes (StartRun with wait ran it there). Drop the stream at the third park.
    const first = await readAll(serverStreamCall(b!.client, RunService.method.streamRunEvents, { runId, followSuspended: true }), async (e) => {
      events.push(e);
      if (!parked(e)) return false;
      if (sent === 2) return true;
      await tick(a!.client, runId, `t${++sent}`);
      return false;
    });
    expect(first.code).toBe(grpc.status.CANCELLED);

    // While nobody follows, the run moves on: a tick through B, and a stream on A (no
    // follow_suspended) that ends when the run parks again tells us it did.
    await tick(b!.client, runId, `t${++sent}`);
    const settled = await readAll(serverStreamCall(a!.client, RunService.method.streamRunEvents, { runId, afterSeq: events[events.length - 1]!.seq }), async () => false);
    expect(settled.code).toBe(grpc.status.OK);

    // Reconnect to B with the last seq seen, ticking through A at each live park.
    const second = await readAll(serverStreamCall(b!.client, RunService.method.streamRunEvents, {
      runId, afterSeq: events[events.length - 1]!.seq, followSuspended: true,
    }), async (e) => {
      events.push(e);
      if (parked(e) && sent < ticks) await tick(a!.client, runId, `t${++sent}`);
    });
    expect(second.code).toBe(grpc.status.OK);
    expect(events.map((e) => Number(e.seq))).toEqual(events.map((_, i) => i));
    const last = events[events.length - 1]!;
    expect(last.body.case === 'statusChanged' && RunStatus[last.body.value.status]).toBe('SUCCEEDED');
    expect(last.body.case === 'statusChanged' && plain(last.body.value.output)).toEqual({ total: ticks });

    // The journal on A says the same, entry for entry.
    const journal = await unaryCall(a!.client, RunService.method.getJournal, { runId, pageSize: 1000 });
    expect(journal.entries.map((e) => [e.seq, e.kind])).toEqual(events.map((e) => [e.seq, e.body.case === 'entry' ? e.body.value.kind : 'status']));
  });

  it('a stream ends with UNAVAILABLE when its server shuts down, and the client resumes on the other replica', { timeout: TIMEOUT }, async () => {
    const [a, b] = replicas;
    const started = await unaryCall(a!.client, RunService.method.startRun, { workflow: 'ticker', input: json({ ticks: 2 }), wait: true }, 60_000);
    const runId = started.run!.id;
    const events: RunEvent[] = [];
    const reader = serverStreamCall(b!.client, RunService.method.streamRunEvents, { runId, followSuspended: true });
    let stopping: Promise<unknown> | null = null;
    const cut = await readAll(reader, async (e) => {
      events.push(e);
      if (parked(e) && !stopping) stopping = b!.process.stop('SIGTERM');
    });
    expect(cut.code).toBe(grpc.status.UNAVAILABLE);
    expect((await stopping!) as { code: number }).toMatchObject({ code: 0 });
    // The run is parked where the stream was cut: tick, then follow it on A from the last seq.
    let sent = 1;
    await tick(a!.client, runId, 'u1');
    const resumed = await readAll(serverStreamCall(a!.client, RunService.method.streamRunEvents, {
      runId, afterSeq: events[events.length - 1]!.seq, followSuspended: true,
    }), async (e) => {
      events.push(e);
      if (parked(e) && sent < 2) await tick(a!.client, runId, `u${++sent}`);
    });
    expect(resumed.code).toBe(grpc.status.OK);
    expect(events.map((e) => Number(e.seq))).toEqual(events.map((_, i) => i));
  });
});
