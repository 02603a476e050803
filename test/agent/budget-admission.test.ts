import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { runSpend } from '../../src/engine/read/spend.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { loadUserModule } from '../../src/engine/user-module.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock } from '../engine/harness.js';
import { FakeOpenAIServer } from '../support/fake-openai-server.js';
import { until } from '../support/until.js';
import { BUDGET_WORKFLOWS, fakeModelEnv, NS, TTL } from './agent-harness.js';

/*
 * Budget admission (docs/agents.md "Budget admission"): calls in flight hold a reservation of their
 * estimate, so parallel branches and child runs cannot together pass a budget that each alone
 * respects. Every call here answers with 200 output tokens at $500 per million, $0.10 each, and
 * estimates its cost from maxOutputTokens 200: about $0.1001, so the estimate bounds the cost.
 * The provider holds the answers to first calls until the test has seen the calls it expects in
 * flight, so the admissions really overlap.
 */
const PRICE = { input: 1, output: 500 };

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await FakeOpenAIServer.start(() => ({ usage: { prompt: 10, completion: 200 }, text: 'done' }));
});
afterAll(async () => server?.close());

async function budgetEngine() {
  const clock = new FakeClock();
  const store = new MemoryStore({ clock: clock.now });
  const registry = new Registry({ agent: createAgentRuntime({ maxRetries: 0, env: fakeModelEnv(server, PRICE) }) });
  await loadUserModule(BUDGET_WORKFLOWS, registry);
  const engine = new RunEngine({ store, registry, holder: 'worker-1', leaseTtlMs: TTL, clock: clock.now });
  return { store, engine };
}

const requestsFor = (question: string) => server.chats.filter((c) => JSON.stringify(c.body.messages).includes(question));


describe('budget admission', () => {
  it('two parallel agents under a $0.15 budget: one call is admitted, the other refused while the first is in flight', async () => {
    const q = 'admission-pair';
    const { store, engine } = await budgetEngine();
    const held = server.hold(1);
    const started = engine.runStart({ namespace: NS, workflowName: 'budget-pair', input: { question: q }, budgetUsd: 0.15, execute: true });
    const first = await held.reached;
    // The second branch is refused without reaching the provider: its verdict comes while the
    // first call, still unanswered, holds its reservation.
    const refused = async () => (await store.runList({ namespace: NS, pageSize: 10 })).runs
      .find((r) => r.workflowName === 'budget-pair' && (r.input as { question?: string }).question === q);
    await until('the refusal', async () => {
      const run = await refused();
      return run && (await store.journalList({ runId: run.id })).some((e) => e.name === 'budget_exceeded') ? true : undefined;
    }, 20_000, 10);
    expect(requestsFor(q)).toEqual([first]);
    held.release();
    const { run } = await started;
    expect(run.status).toBe('SUCCEEDED');
    const output = run.output as { label: string; costUsd?: number; refused?: string }[];
    expect(output.filter((b) => b.refused === 'BudgetExceededError')).toHaveLength(1);
    expect(output.filter((b) => b.costUsd !== undefined)).toHaveLength(1);
    const spend = await runSpend({ store, runId: run.id, namespace: NS });
    expect(spend.totalUsd).toBeLessThanOrEqual(0.15);
    expect(spend.reservedUsd).toBe(0);
    const refusal = (await store.journalList({ runId: run.id })).find((e) => e.kind === 'emit' && e.name === 'budget_exceeded');
    expect(refusal?.payload).toMatchObject({ budgetUsd: 0.15, spentUsd: 0, reservedUsd: expect.closeTo(0.1001, 3) });
  });

  it('two parallel agents and a child run under one budget never spend past it', async () => {
    const q = 'admission-tree';
    const { store, engine } = await budgetEngine();
    const held = server.hold(1);
    const started = engine.runStart({ namespace: NS, workflowName: 'budget-tree', input: { question: q }, budgetUsd: 0.25, execute: true });
    // Both branch calls are in flight, unanswered: $0.2002 reserved of $0.25.
    await until('two calls in flight', () => (requestsFor(q).length === 2 ? true : undefined), 20_000, 10);
    const [child] = await engine.runExecutePending();
    expect(child!.run!.workflowName).toBe('budget-leaf');
    expect(child!.run!.status).toBe('FAILED');
    expect(child!.run!.error).toMatchObject({ name: 'BudgetExceededError', details: { budgetUsd: 0.25, spentUsd: 0 } });
    held.release();
    let parent = (await started).run;
    for (let i = 0; i < 5 && parent.status !== 'SUCCEEDED'; i++) {
      await engine.runExecutePending();
      parent = await store.runGet({ runId: parent.id, namespace: NS });
    }
    expect(parent.status).toBe('SUCCEEDED');
    expect(parent.output).toEqual([
      { label: 'A', costUsd: expect.closeTo(0.10001, 6) },
      { label: 'B', costUsd: expect.closeTo(0.10001, 6) },
      { label: 'C', refused: 'BudgetExceededError' },
    ]);
    expect(requestsFor(q)).toHaveLength(2);
    const spend = await runSpend({ store, runId: parent.id, namespace: NS });
    expect(spend).toMatchObject({ totalUsd: expect.closeTo(0.20002, 6), reservedUsd: 0, pricedCalls: 2 });
    expect(spend.totalUsd).toBeLessThanOrEqual(0.25);
  });
});
