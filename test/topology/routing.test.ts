import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { until } from '../support/until.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { grpcJsClient, unaryCall } from '../server/grpc-js-client.js';

/*
 * Routing as real processes (docs/recovery.md "Routing"): replica A serves {x (old)}, replica B
 * serves {x (new), y}, one sweeper. Runs of y started through A are executed by B and none fails;
 * with B stopped they stay PENDING and the sweeper reports them; with B back they complete. Runs
 * of x started on A and on B are pinned to that replica's digest and finish on a replica with it.
 * Each workflow records, in a step, which replica executed it.
 */

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
const NS = 'default';
let db: MigratedDatabase;
let store: PostgresStore;
const processes: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_routing');
  store = await PostgresStore.connect({ url: db.url, applicationName: 'routing-test', poolSize: 2 });
}, 120_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  await store?.close();
  await db?.drop();
}, 120_000);

function start(args: string[], replica: string): WaymarkProcess {
  const p = WaymarkProcess.start(args, {
    env: {
      DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', ROUTING_REPLICA: replica,
      WAYMARK_LEASE_TTL_MS: '3000', WAYMARK_SWEEP_INTERVAL_MS: '200', WAYMARK_REPLICA_TTL_MS: '3000', WAYMARK_UNROUTABLE_AFTER_MS: '300',
    },
  });
  processes.push(p);
  return p;
}
const server = (module: string, replica: string) => start(['server', '--workflows', path.join(FIXTURES, module)], replica);


const struct = (value: JsonValue) => fromJson(ValueSchema, value);

const ended = (runId: string) => until(`run ${runId} to end`, async () => {
  const run = await store.runGet({ runId, namespace: NS });
  return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(run.status) ? run : undefined;
});

describe('routing across replicas', () => {
  it('y runs only on B, waits PENDING (reported) while B is down, completes when B is back; two digests of x side by side', async () => {
    const sweeper = start(['sweeper'], 'sweeper');
    const a = server('routing-a.ts', 'A');
    let b = server('routing-b.ts', 'B');
    const [addrA, addrB] = await Promise.all([a.listening(), b.listening()]);
    const clientA = grpcJsClient(addrA);
    const clientB = grpcJsClient(addrB);
    try {
      // ListWorkflows on A shows what the live replicas serve, and who serves it.
      const listed = await until('both replicas registered', async () => {
        const { workflows } = await unaryCall(clientA, RunService.method.listWorkflows, {});
        return workflows.length === 3 ? workflows : undefined;
      });
      expect(listed.map((w) => `${w.name}:${w.replicas.length}`).sort()).toEqual(['x:1', 'x:1', 'y:1']);

      // y through A (which lacks it): accepted, executed on B, where it parks on a signal.
      const ys: string[] = [];
      for (let i = 0; i < 4; i++) {
        const { run } = await unaryCall(clientA, RunService.method.startRun, { workflow: 'y', input: struct({ order: `o-${i}` }) });
        ys.push(run!.id);
      }
      for (const id of ys) await until(`run ${id} to park`, async () => ((await store.runGet({ runId: id, namespace: NS })).status === 'SUSPENDED' ? true : undefined));
      // Signals sent to A: A does not serve y, so B continues the runs.
      for (const id of ys.slice(0, 2)) await unaryCall(clientA, SignalService.method.sendSignal, { runId: id, name: 'go', payload: struct({}) });
      for (const id of ys.slice(0, 2)) expect(await ended(id)).toMatchObject({ status: 'SUCCEEDED', output: { started: 'B', replica: 'B' } });

      // Two digests of x: pinned to the digest of the replica that started them, finished there.
      const fromA = (await unaryCall(clientA, RunService.method.startRun, { workflow: 'x', input: struct({ n: 1 }) })).run!;
      const fromB = (await unaryCall(clientB, RunService.method.startRun, { workflow: 'x', input: struct({ n: 2 }) })).run!;
      expect(fromA.workflowDigest).not.toBe(fromB.workflowDigest);
      expect(await ended(fromA.id)).toMatchObject({ output: { version: 'old', replica: 'A' } });
      expect(await ended(fromB.id)).toMatchObject({ output: { version: 'new', replica: 'B' } });

      // B stops: the other two are signalled meanwhile and wait PENDING (A hands them back), none
      // fails, and the sweeper reports them. A new run of y is refused: no live replica serves it.
      await b.stop('SIGTERM');
      const waiting = ys.slice(2);
      for (const id of waiting) await unaryCall(clientA, SignalService.method.sendSignal, { runId: id, name: 'go', payload: struct({}) });
      for (const id of waiting) {
        await sweeper.waitForLog((l) => l.runId === id && String(l.msg).includes('no live replica can execute it'), 30_000);
        expect((await store.runGet({ runId: id, namespace: NS })).status).toBe('PENDING');
      }
      await expect(unaryCall(clientA, RunService.method.startRun, { workflow: 'y', input: struct({ order: 'none' }) })).rejects.toMatchObject({ code: 5 });

      // B is back: the waiting runs complete there.
      b = server('routing-b.ts', 'B');
      await b.listening();
      for (const id of waiting) expect(await ended(id)).toMatchObject({ status: 'SUCCEEDED', output: { started: 'B', replica: 'B' } });
      const failed = (await store.runList({ namespace: NS, statuses: ['FAILED'], pageSize: 10 })).runs;
      expect(failed).toEqual([]);
    } finally {
      clientA.close();
      clientB.close();
    }
  }, 180_000);
});
