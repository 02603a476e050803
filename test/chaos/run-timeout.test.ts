import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { grpcJsClient, unaryCall } from '../server/grpc-js-client.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { EffectSink } from './support/effect-sink.js';
import { chaosEnv, Driver, kill, NS, startServer, startSweeper } from './support/cluster.js';

/*
 * The run timeout across a crash (issue 15, docs/recovery.md "Run timeouts"): a run started with a
 * StartRun timeout on server A is executing there (an effect the sink holds mid-flight) when A is
 * SIGKILLed. No process that saw the run survives; a sweeper started after the kill knows of it
 * only through the database, and fails it at the deadline written in the run row at creation.
 */

let db: TestDatabase;
let driver: Driver;
let sink: EffectSink;
const processes: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_chaos_run_timeout');
  sink = await EffectSink.start();
  driver = await Driver.open(db.url);
}, 180_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  await driver?.close();
  await sink?.close();
  await db?.drop();
}, 120_000);

const struct = (value: JsonValue) => fromJson(ValueSchema, value);
const TIMEOUT_S = 15;

describe('run timeout across a crash', () => {
  it('fires after a SIGKILL of the replica that started it: the deadline is in the run row, not in memory', async () => {
    sink.hold((d) => d.effect === 't1:held');
    const a = await startServer(chaosEnv(db.url));
    processes.push(a);
    const client = grpcJsClient(await a.listening());
    const { run: started } = await unaryCall(client, RunService.method.startRun, {
      workflow: 'chaos-timeout', input: struct({ sink: sink.url, tag: 't1' }), timeout: { seconds: BigInt(TIMEOUT_S), nanos: 0 },
    });
    client.close();
    const runId = started!.id;
    const held = await sink.waitFor((d) => d.effect === 't1:held');
    expect(held.pid).toBe(a.child.pid); // A is executing it, the effect in flight

    const before = await driver.store.runGet({ runId, namespace: NS });
    expect(before.status).toBe('RUNNING');
    expect(before.leaseHolder).toContain(String(a.child.pid));
    expect(before.deadlineAt!.getTime() - before.createdAt.getTime()).toBe(TIMEOUT_S * 1000);
    const killedAt = await driver.store.clockNow();
    expect(killedAt.getTime()).toBeLessThan(before.deadlineAt!.getTime()); // the kill lands before the deadline
    await kill(a);

    // Only now a sweeper starts: nothing it knows of the run came from A's memory.
    const sweeper = await startSweeper(chaosEnv(db.url));
    processes.push(sweeper);
    await driver.waitUntil(async () => (await driver.store.runGet({ runId, namespace: NS })).status === 'FAILED', 90_000);

    const after = await driver.store.runGet({ runId, namespace: NS });
    expect(after.error).toMatchObject({ name: 'RunTimedOutError', reason: 'run_timed_out', details: { deadline: before.deadlineAt!.toISOString() } });
    const entries = await driver.store.journalList({ runId });
    const terminal = entries[entries.length - 1]!;
    expect(terminal).toMatchObject({ kind: 'status', name: 'FAILED', payload: { error: { reason: 'run_timed_out' } } });
    expect(terminal.createdAt.getTime()).toBeGreaterThanOrEqual(before.deadlineAt!.getTime()); // not before its deadline
    // The sweeper (not a replica) failed it: waitForLog rejects if that line never comes.
    await sweeper.waitForLog((l) => l.msg === 'run timed out: failed with RunTimedOutError' && l.runId === runId);

    // Its child was cancelled with it; the held effect was delivered once (nothing re-executed the run).
    const { runs: children } = await driver.store.runList({ namespace: NS, parentRunId: runId, pageSize: 10 });
    expect(children.map((c) => [c.workflowName, c.status, c.error?.message])).toEqual([['chaos-idle-kid', 'CANCELLED', 'its parent run timed out']]);
    expect(sink.deliveries.filter((d) => d.effect === 't1:held')).toHaveLength(1);
    const violations = await driver.journalViolations([runId]);
    expect(violations).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
    console.log(`chaos: run timeout after SIGKILL: killed ${before.deadlineAt!.getTime() - killedAt.getTime()} ms before the deadline, failed ${terminal.createdAt.getTime() - before.deadlineAt!.getTime()} ms after it, by a sweeper started after the kill`);
  }, 180_000);
});
