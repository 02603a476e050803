import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSpend } from '../../src/engine/read/spend.js';
import type { JournalStore } from '../../src/store/store.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock } from '../engine/harness.js';
import { FakeOpenAIServer } from '../support/fake-openai-server.js';
import { agentEngine, fakeModelEnv, NS, TTL } from './agent-harness.js';

/*
 * Budgets through the real provider path. Each model call reports 100,000 x step prompt tokens at
 * $1 per million, so the calls cost $0.10, $0.20, $0.30…, while their estimates (the request text
 * and 200 output tokens) are well under a cent. With budget_usd 0.25 the third call must not be made.
 */
let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await FakeOpenAIServer.start(({ step }) => {
    const usage = { prompt: 100_000 * step, completion: 0 };
    if (step === 1) return { usage, toolCalls: [{ name: 'lookup', arguments: { topic: 'tides' } }] };
    if (step === 2) return { usage, toolCalls: [{ name: 'lookup', arguments: { topic: 'moon' } }, { name: 'write_note', arguments: { text: 'draft' } }] };
    if (step === 3) return { usage, toolCalls: [{ name: 'write_note', arguments: { text: 'final' } }] };
    return { usage, text: 'Tides follow the moon.' };
  });
  process.env.FAKE_EFFECTS_URL = `${server.baseURL}/effects`;
});
afterAll(async () => server?.close());

const runtime = () => ({ env: fakeModelEnv(server) });
const stepsOf = (question: string) => server.chats.filter((c) => JSON.stringify(c.body.messages).includes(question)).map((c) => c.step);

/** A store whose worker "dies" when it is about to journal the answer of model call `step`. */
function crashBeforeAnswerOf(inner: JournalStore, step: number): JournalStore {
  let crashed = false;
  return new Proxy(inner, {
    get(target, key) {
      if (key === 'journalAppend') {
        return async (p: Parameters<JournalStore['journalAppend']>[0]) => {
          const hit = p.entries.some((e) => e.kind === 'model' && e.status === 'ok' && (e.payload as { step?: number }).step === step);
          if (hit && !crashed) {
            crashed = true;
            throw new Error(`simulated crash before journaling model call ${step}`);
          }
          return target.journalAppend(p);
        };
      }
      const value = Reflect.get(target, key) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('budget_usd', () => {
  it('a run whose budget is below its third call ends budget_exceeded before making that call', async () => {
    const q = 'budget-plain';
    const { engine, store } = await agentEngine({ runtime: runtime() });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'crash-research', input: { question: q }, budgetUsd: 0.25, execute: true });
    expect(run.status).toBe('FAILED');
    expect(run.error).toMatchObject({
      name: 'BudgetExceededError', reason: 'budget_exceeded',
      details: { budgetRunId: run.id, budgetUsd: 0.25, spentUsd: 0.3, model: 'compatible:fake-model' },
    });
    expect(stepsOf(q)).toEqual([1, 2]);
    expect((await runSpend({ store, runId: run.id, namespace: NS })).totalUsd).toBe(0.3);
    const events = (await store.journalList({ runId: run.id })).filter((e) => e.kind === 'emit');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ name: 'budget_exceeded', status: 'info', payload: { type: 'budget_exceeded', budgetUsd: 0.25, spentUsd: 0.3 } });
  });

  it('after a crash mid-call and a resume on another worker the spend is the same figure, not counted twice', async () => {
    const q = 'budget-crash';
    const clock = new FakeClock();
    const inner = new MemoryStore({ clock: clock.now });
    const first = await agentEngine({ runtime: runtime(), clock, store: crashBeforeAnswerOf(inner, 2), holder: 'worker-1' });
    const started = await first.engine.runStart({ namespace: NS, workflowName: 'crash-research', input: { question: q }, budgetUsd: 0.25, execute: true });
    expect(started.execution!.outcome).toBe('aborted');
    const runId = started.run.id;
    expect(stepsOf(q)).toEqual([1, 2]);
    // Call 2 reached the provider, but its answer was never journaled: it costs nothing in the journal.
    expect((await runSpend({ store: inner, runId, namespace: NS })).totalUsd).toBe(0.1);

    clock.advance(TTL + 1);
    const second = await agentEngine({ runtime: runtime(), clock, store: inner, holder: 'worker-2' });
    const resumed = await second.engine.runExecute({ runId, namespace: NS });
    expect(resumed!.run!.status).toBe('FAILED');
    expect(resumed!.run!.error).toMatchObject({ reason: 'budget_exceeded', details: { spentUsd: 0.3 } });
    // The call in flight was made again (same idempotency key); call 1 was not; call 3 never.
    expect(stepsOf(q)).toEqual([1, 2, 2]);
    const twos = server.chats.filter((c) => JSON.stringify(c.body.messages).includes(q) && c.step === 2);
    expect(twos[0]!.idempotencyKey).toBe(twos[1]!.idempotencyKey);
    expect((await runSpend({ store: inner, runId, namespace: NS })).totalUsd).toBe(0.3);

    // Resuming the failed run replays everything and refuses call 3 again: same spend, same event.
    const again = await second.engine.runResume({ runId, namespace: NS });
    expect(again.run.status).toBe('FAILED');
    expect(stepsOf(q)).toEqual([1, 2, 2]);
    expect((await runSpend({ store: inner, runId, namespace: NS })).totalUsd).toBe(0.3);
    expect((await inner.journalList({ runId })).filter((e) => e.kind === 'emit')).toHaveLength(1);
  });

  it("a child's spend counts toward its parent's budget", async () => {
    const q = 'budget-child';
    const { engine, store } = await agentEngine({ runtime: runtime() });
    const { run: parent } = await engine.runStart({ namespace: NS, workflowName: 'delegator', input: { question: q }, budgetUsd: 0.25, execute: true });
    expect(parent.status).toBe('SUSPENDED');
    const [child] = await engine.runExecutePending();
    expect(child!.run!.status).toBe('FAILED');
    expect(child!.run!.budgetUsd).toBeNull();
    expect(child!.run!.error).toMatchObject({ reason: 'budget_exceeded', details: { budgetRunId: parent.id, spentUsd: 0.3 } });
    expect(stepsOf(q)).toEqual([1, 2]);
    await engine.runExecutePending();
    const after = await store.runGet({ runId: parent.id, namespace: NS });
    expect(after.status).toBe('FAILED');
    expect(await runSpend({ store, runId: parent.id, namespace: NS })).toMatchObject({ ownUsd: 0, childrenUsd: 0.3, totalUsd: 0.3, pricedCalls: 2 });
  });

  it('a budgeted run refuses a model without a price; an unbudgeted one journals its calls with cost null', async () => {
    const env = { WAYMARK_MODEL_BASE_URL: server.baseURL };
    const { engine, store } = await agentEngine({ runtime: { env } });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'crash-research', input: { question: 'unpriced-budget' }, budgetUsd: 1, execute: true });
    expect(run.error).toMatchObject({ name: 'ModelPriceMissingError', reason: 'model_price_missing' });
    expect(stepsOf('unpriced-budget')).toEqual([]);
    const free = await engine.runStart({ namespace: NS, workflowName: 'crash-research', input: { question: 'unpriced-free' }, execute: true });
    expect(free.run.status).toBe('SUCCEEDED');
    const models = (await store.journalList({ runId: free.run.id })).filter((e) => e.kind === 'model' && e.status === 'ok');
    expect(models).toHaveLength(4);
    expect(models.every((e) => e.costUsd === null && e.usage !== null)).toBe(true);
  });
});
