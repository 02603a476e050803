import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSpend } from '../../src/engine/read/spend.js';
import { runProvenance } from '../../src/agent/provenance.js';
import type { RunStatus } from '../../src/journal/run.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { FakeOpenAIServer } from '../support/fake-openai-server.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { AGENT_WORKFLOWS, agentEngine, agentProcess, fakeModelEnv, NS, shape } from './agent-harness.js';

/*
 * A crash mid-agent costs at most the model call in flight. A real `waymark server --workflows`
 * process runs a four-call agent against PostgreSQL and the fake provider; the provider holds its
 * answer to the third call, and the test kills the server with SIGKILL as soon as that call
 * arrives (two calls answered). A second real process (`waymark dev` on the same database: server
 * and sweeper) recovers the run once its lease has expired (the lease is backdated, not waited
 * for) and finishes it. The provider must have seen calls 1, 2 and 4 once and call 3 twice (the
 * one in flight, then its redispatch under the same idempotency key), and every tool effect must
 * have been delivered exactly once.
 */

let db: MigratedDatabase;
let admin: pg.Pool;
let server: FakeOpenAIServer;
const processes: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_agent_crash');
  admin = db.admin;
  server = await FakeOpenAIServer.start(({ step }) => {
    if (step === 1) return { toolCalls: [{ name: 'lookup', arguments: { topic: 'tides' } }] };
    if (step === 2) return { toolCalls: [{ name: 'lookup', arguments: { topic: 'moon' } }, { name: 'write_note', arguments: { text: 'draft' } }] };
    if (step === 3) return { toolCalls: [{ name: 'write_note', arguments: { text: 'final' } }] };
    return { text: 'Tides follow the moon.' };
  });
  process.env.FAKE_EFFECTS_URL = `${server.baseURL}/effects`;
}, 120_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop('SIGKILL')));
  await server?.close();
  await db?.drop();
}, 120_000);

function waymark(command: 'server' | 'dev'): WaymarkProcess {
  const p = agentProcess(command, { module: AGENT_WORKFLOWS, server, databaseUrl: db.url, env: { FAKE_EFFECTS_URL: `${server.baseURL}/effects` } });
  processes.push(p);
  return p;
}

/** Resolves once the run has one of `statuses`, woken by the store's NOTIFY (re-checked each second as a fallback). */
async function statusReached(store: PostgresStore, runId: string, statuses: RunStatus[], timeoutMs = 90_000): Promise<RunStatus> {
  return new Promise((resolve, reject) => {
    let unsubscribe: (() => Promise<void>) | null = null;
    const stop = () => { clearInterval(poll); clearTimeout(timer); void unsubscribe?.().catch(() => undefined); };
    const check = () => void store.runGet({ runId, namespace: NS }).then((run) => {
      if (statuses.includes(run.status)) { stop(); resolve(run.status); }
    }, () => undefined);
    const poll = setInterval(check, 1_000);
    const timer = setTimeout(() => { stop(); reject(new Error(`run ${runId} did not reach ${statuses.join('|')} in ${timeoutMs} ms`)); }, timeoutMs);
    void store.wakeupSubscribe({ runId, onRun: check }).then((u) => { unsubscribe = u; check(); });
  });
}

describe('a waymark process killed mid-agent', () => {
  it('costs at most the model call in flight: another process replays the finished calls and tools and finishes the run', async () => {
    const store = await PostgresStore.connect({ url: db.url, applicationName: 'agent-crash-test', poolSize: 4 });
    try {
      const held = server.hold(3);
      const first = waymark('server');
      await first.listening();
      // The run is created PENDING from here (same module, same digest); the server's executor claims it.
      const { engine } = await agentEngine({ runtime: { env: fakeModelEnv(server) }, store, holder: 'test', clockless: true });
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'crash-research', input: { question: 'why do tides happen' } });
      const runId = run.id;
      const inFlight = await held.reached;
      await first.stop('SIGKILL');
      held.release();
      expect(server.countByStep()).toEqual({ 1: 1, 2: 1, 3: 1 });

      const before = await store.journalList({ runId });
      // Call 3's intent was committed before the provider was called; its answer never was.
      expect(shape(before).slice(-2)).toEqual(['ok tool write_note', 'running model compatible:fake-model']);
      expect((await store.runGet({ runId, namespace: NS })).status).toBe('RUNNING');

      // The dead server's lease expires (backdated, with the sweeper's grace period, instead of waited for).
      await admin.query(`UPDATE runs SET lease_expires_at = clock_timestamp() - interval '1 second',
        created_at = created_at - interval '1 minute' WHERE id = $1`, [runId]);
      const second = waymark('dev');
      await second.listening();
      expect(await statusReached(store, runId, ['SUCCEEDED', 'FAILED', 'CANCELLED'])).toBe('SUCCEEDED');
      const done = await store.runGet({ runId, namespace: NS });
      expect(done.output).toMatchObject({ answer: 'Tides follow the moon.', steps: 4, stoppedBy: 'answer' });
      await second.stop('SIGTERM');
      // With no API key, `waymark dev` says at start that `default` is the scripted model, and serves the example.
      expect(second.logs.some((l) => l.defaultModel === 'scripted:auto' && String(l.msg).includes('built-in scripted model'))).toBe(true);
      expect(second.logs.find((l) => l.msg === 'examples registered')?.workflows).toEqual(expect.arrayContaining(['research-agent']));

      expect(server.countByStep()).toEqual({ 1: 1, 2: 1, 3: 2, 4: 1 });
      const threes = server.chats.filter((c) => c.step === 3);
      expect(threes[1]!.idempotencyKey).toBe(inFlight.idempotencyKey);
      expect(inFlight.idempotencyKey).toMatch(new RegExp(`^${runId}:[0-9a-f]{32}$`));

      // Every tool effect was delivered once: none of the finished ones ran again.
      const mine = server.effects.filter((e) => e.idempotencyKey?.startsWith(`${runId}:`));
      expect(mine.map((e) => e.name)).toEqual(['lookup', 'lookup', 'write_note', 'write_note']);
      expect(new Set(mine.map((e) => e.idempotencyKey)).size).toBe(4);

      const entries = await store.journalList({ runId });
      const models = entries.filter((e) => e.kind === 'model' && e.status === 'ok');
      expect(models.map((e) => e.usage?.totalTokens)).toEqual([120, 220, 320, 420]);
      expect(models.map((e) => e.costUsd)).toEqual([0.00012, 0.00022, 0.00032, 0.00042]);
      // The lost attempt of call 3 left no cost: spend is the four answered calls, once each.
      expect((await runSpend({ store, runId, namespace: NS })).totalUsd).toBe(0.00108);

      const prov = await runProvenance({ store, runId, namespace: NS });
      const agent = prov.agents[0]!;
      expect(agent).toMatchObject({ agentType: 'researcher', answer: 'Tides follow the moon.', costUsd: 0.00108 });
      expect(agent.drewOn.modelCalls).toEqual(models.map((e) => e.seq));
      expect(agent.toolResults.map((t) => `${t.toolName}:${t.status}`)).toEqual(['lookup:ok', 'lookup:ok', 'write_note:ok', 'write_note:ok']);

      const preview = await engine.runPreview({ runId, namespace: NS });
      expect(preview).toMatchObject({ outcome: 'succeeded', misses: 0, reruns: 0, orphaned: 0 });
    } finally {
      await store.close();
    }
  }, 180_000);
});
