import path from 'node:path';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { runProvenance } from '../../src/agent/provenance.js';
import { runSpend } from '../../src/engine/read/spend.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { loadUserModule } from '../../src/engine/user-module.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock } from '../engine/harness.js';
import { NS, TTL } from './agent-harness.js';

/*
 * examples/research-agent.ts as `waymark dev --workflows` serves it with no API key: the `default`
 * model is the built-in scripted one, which says so at start, replies deterministically, and runs
 * the real loop (AI SDK, journal, tool policy, budget) offline.
 */
const EXAMPLE = path.resolve('examples/research-agent.ts');

async function runExample(question: string) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } }));
  const registry = new Registry({ agent: createAgentRuntime({ env: {}, logger }) });
  await loadUserModule(EXAMPLE, registry);
  const clock = new FakeClock();
  const store = new MemoryStore({ clock: clock.now });
  const engine = new RunEngine({ store, registry, holder: 'dev', leaseTtlMs: TTL, clock: clock.now });
  const started = await engine.runStart({ namespace: NS, workflowName: 'research-agent', input: { question }, budgetUsd: 0.05, execute: true });
  return { lines, store, engine, started };
}

describe('examples/research-agent.ts on the scripted model', () => {
  it('says at start that agents use the scripted model, searches, parks on save_report, and answers after approval', async () => {
    const { lines, engine, store, started } = await runExample('Why do tides happen?');
    expect(lines.some((l) => String(l.msg).includes('built-in scripted model') && l.defaultModel === 'scripted:auto')).toBe(true);
    expect(started.run.status).toBe('SUSPENDED');
    expect(started.waitingOn.map((w) => w.name)).toEqual(['tool:save_report']);

    await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'editor', requestId: 'r1' });
    const [done] = await engine.runExecutePending();
    const output = done!.run!.output as { answer: string; steps: number; costUsd: number; tools: string[] };
    expect(output.tools).toEqual(['search_notes:ok', 'save_report:ok']);
    expect(output.steps).toBe(3);
    expect(output.answer).toMatch(/^Scripted answer \(the built-in offline model\) to "Why do tides happen\?"\. It drew on search_notes: .*Moon.*; save_report: .*report-/);
    // Nominal scripted prices: small, journaled, and within the run's budget.
    expect(output.costUsd).toBeGreaterThan(0);
    const spend = await runSpend({ store, runId: done!.runId, namespace: NS });
    expect(spend.totalUsd).toBe(output.costUsd);
    expect(spend.totalUsd).toBeLessThan(0.05);

    const prov = await runProvenance({ store, runId: done!.runId, namespace: NS });
    const agent = prov.agents[0]!;
    expect(agent.answer).toBe(output.answer);
    expect(agent.modelCalls.map((m) => [m.step, m.model, m.status])).toEqual([[1, 'scripted:auto', 'ok'], [2, 'scripted:auto', 'ok'], [3, 'scripted:auto', 'ok']]);
    expect(agent.toolResults.map((t) => [t.toolName, t.status, t.approvalSeq !== null])).toEqual([['search_notes', 'ok', false], ['save_report', 'ok', true]]);
    expect(agent.drewOn.toolResults).toEqual(agent.toolResults.map((t) => t.seq));
  });

  it('is deterministic: two runs of the same question journal the same model calls and answer', async () => {
    const finish = async () => {
      const { engine, store, started } = await runExample('What are spring tides?');
      await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'editor', requestId: 'r1' });
      const [done] = await engine.runExecutePending();
      const models = (await store.journalList({ runId: done!.runId })).filter((e) => e.kind === 'model' && e.status === 'ok');
      return { output: done!.run!.output as Record<string, unknown>, models: models.map((e) => ({ payload: e.payload, usage: e.usage, costUsd: e.costUsd, contentKey: e.contentKey })) };
    };
    const a = await finish();
    const b = await finish();
    // The saved report's id comes from the run's idempotency key, so it differs between runs, and
    // with it the third request: compare without it. The first two requests are identical.
    const strip = (v: unknown) => JSON.stringify(v).replace(/report-[0-9a-f]{8}/g, 'report-*').replace(/"(requestDigest|contentKey)":"[0-9a-f]+"/g, '"$1":"*"');
    expect(strip(a.output)).toBe(strip(b.output));
    expect(strip(a.models)).toBe(strip(b.models));
    expect(a.models.slice(0, 2).map((m) => m.contentKey)).toEqual(b.models.slice(0, 2).map((m) => m.contentKey));
  });
});
