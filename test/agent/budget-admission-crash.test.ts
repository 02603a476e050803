import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSpend } from '../../src/engine/read/spend.js';
import type { RunStatus } from '../../src/journal/run.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { until } from '../support/until.js';
import { FakeOpenAIServer } from '../support/fake-openai-server.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { loadUserModule } from '../../src/engine/user-module.js';
import { agentProcess, BUDGET_WORKFLOWS, fakeModelEnv, NS } from './agent-harness.js';

/*
 * Budget admission across a SIGKILL. A real `waymark server` runs `budget-tree` under a $0.25
 * budget: branches A and B call the model (the provider holds both answers), and the child run C
 * is refused while their $0.2002 is reserved. The server is then killed with both calls in flight.
 * A second process recovers the run: the two calls are redispatched under their own intents (so
 * their reservations are neither lost nor counted twice), C stays refused, and the run ends with
 * $0.20002 spent of $0.25 and nothing reserved.
 */

const PRICE = { input: 1, output: 500 };
let db: MigratedDatabase;
let admin: pg.Pool;
let server: FakeOpenAIServer;
const processes: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_budget_crash');
  admin = db.admin;
  server = await FakeOpenAIServer.start(() => ({ usage: { prompt: 10, completion: 200 }, text: 'done' }));
}, 120_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  await server?.close();
  await db?.drop();
}, 120_000);

function waymark(command: 'server' | 'dev'): WaymarkProcess {
  const p = agentProcess(command, { module: BUDGET_WORKFLOWS, server, databaseUrl: db.url, price: PRICE });
  processes.push(p);
  return p;
}


const requestsFor = (text: string) => server.chats.filter((c) => JSON.stringify(c.body.messages).includes(text));

describe('budget admission across a SIGKILL', () => {
  it('the calls in flight keep their reservations through recovery; the tree never spends past its budget', async () => {
    const store = await PostgresStore.connect({ url: db.url, applicationName: 'budget-crash-test', poolSize: 4 });
    try {
      const q = 'admission-crash';
      const held = server.hold(1);
      const first = waymark('server');
      await first.listening();
      // The run is created PENDING from here (same module, same digest); the server's executor claims it.
      const registry = new Registry({ agent: createAgentRuntime({ maxRetries: 0, env: fakeModelEnv(server, PRICE) }) });
      await loadUserModule(BUDGET_WORKFLOWS, registry);
      const engine = new RunEngine({ store, registry, holder: 'test', leaseTtlMs: 3_000 });
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'budget-tree', input: { question: q }, budgetUsd: 0.25 });
      await until('A and B in flight', async () => (requestsFor(q).length === 2 ? true : undefined));
      const child = await until('the child refused', async () => {
        const kids = (await store.runList({ namespace: NS, parentRunId: run.id, pageSize: 5 })).runs;
        return kids.find((k) => k.status === 'FAILED');
      });
      expect(child.error).toMatchObject({ name: 'BudgetExceededError', details: { budgetRunId: run.id, budgetUsd: 0.25, spentUsd: 0 } });
      const inFlight = requestsFor(q).map((c) => c.idempotencyKey).sort();

      await first.stop('SIGKILL');
      expect((await runSpend({ store, runId: run.id, namespace: NS })).reservedUsd).toBeCloseTo(0.2, 2);
      await admin.query(`UPDATE runs SET lease_expires_at = clock_timestamp() - interval '1 second',
        created_at = created_at - interval '1 minute' WHERE id = $1`, [run.id]);
      held.release();
      const second = waymark('dev');
      await second.listening();
      const status = await until<RunStatus>('the run to end', async () => {
        const r = await store.runGet({ runId: run.id, namespace: NS });
        return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(r.status) ? r.status : undefined;
      }, 90_000);
      expect(status).toBe('SUCCEEDED');
      const done = await store.runGet({ runId: run.id, namespace: NS });
      expect(done.output).toEqual([
        { label: 'A', costUsd: expect.closeTo(0.10001, 6) },
        { label: 'B', costUsd: expect.closeTo(0.10001, 6) },
        { label: 'C', refused: 'BudgetExceededError' },
      ]);
      // A and B were each asked twice (the lost answer, then the redispatch) under one key each; C never.
      const keys = requestsFor(q).map((c) => c.idempotencyKey).sort();
      expect(keys).toEqual([...inFlight, ...inFlight].sort());
      expect(requestsFor(`${q} C`)).toHaveLength(0);
      const spend = await runSpend({ store, runId: run.id, namespace: NS });
      expect(spend).toMatchObject({ totalUsd: expect.closeTo(0.20002, 6), reservedUsd: 0, pricedCalls: 2 });
      expect(spend.totalUsd).toBeLessThanOrEqual(0.25);
      const intents = (await store.journalList({ runId: run.id })).filter((e) => e.kind === 'model' && e.status === 'running');
      expect(intents).toHaveLength(2);
      await second.stop('SIGTERM');
    } finally {
      await store.close();
    }
  }, 180_000);
});
