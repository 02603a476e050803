/**
 * Records the golden journals: runs every scenario of golden-scenarios.ts on a MemoryStore with a
 * fake clock and writes each run's journal to test/replay/golden/<file>.json.
 *
 *   npx tsx test/replay/record-golden.ts            # all scenarios
 *   npx tsx test/replay/record-golden.ts checkout   # only some
 *
 * Re-record only when a journal format change is intended; golden.test.ts replays these files
 * against the current code and must keep passing without re-recording.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RunEngine } from '../../src/engine/run-engine.js';
import type { Run } from '../../src/journal/run.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { JournalStore } from '../../src/store/store.js';
import { crashingStore } from '../engine/crashing-store.js';
import { FakeClock } from '../engine/harness.js';
import { goldenRegistry, scenarios, type Scenario } from './golden-scenarios.js';

const TTL = 30_000;
const NAMESPACE = 'golden';
const here = path.dirname(fileURLToPath(import.meta.url));

/** What a strict replay of a run in this state must report (docs/journal.md). */
function expectedReplay(run: Run): Record<string, unknown> {
  switch (run.status) {
    case 'SUCCEEDED': return { outcome: 'succeeded', output: run.output };
    case 'SUSPENDED': return { outcome: 'parked' };
    // The run died on its last error: a resume retries it, so a strict replay stops there.
    case 'FAILED': return { outcome: 'live_call', why: 'rerun after error' };
    default: throw new Error(`scenario ended ${run.status}; golden runs end SUCCEEDED, SUSPENDED or FAILED`);
  }
}

async function record(scenario: Scenario): Promise<string> {
  const clock = new FakeClock();
  const memory = new MemoryStore({ clock: clock.now });
  const store: JournalStore = scenario.crashAt
    ? crashingStore(memory, scenario.crashAt.map((write) => ({ write, when: 'after' as const })), () => undefined).store
    : memory;
  const engine = new RunEngine({ store, registry: goldenRegistry(), holder: 'recorder', leaseTtlMs: TTL, clock: clock.now });
  const { run } = await engine.runStart({ namespace: NAMESPACE, workflowName: scenario.workflow, input: scenario.input, execute: true });
  for (let i = 0; i < (scenario.crashAt?.length ?? 0); i++) {
    clock.advance(TTL + 1);
    await engine.runExecute({ runId: run.id });
  }
  await scenario.drive?.({ engine, clock, runId: run.id });
  if (scenario.invalidate) {
    const entries = await memory.journalList({ runId: run.id });
    const seqs = scenario.invalidate.map(({ kind, name }) => entries.find((e) => e.kind === kind && e.name === name && e.status === 'ok')!.seq);
    await engine.runResume({ runId: run.id, namespace: NAMESPACE, invalidate: seqs });
  }
  const children = (await memory.runList({ namespace: NAMESPACE, parentRunId: run.id, pageSize: 100 })).runs.reverse();
  const runs = [];
  for (const r of [run, ...children]) {
    const final = await memory.runGet({ runId: r.id, namespace: NAMESPACE });
    runs.push({ run: final, entries: await memory.journalList({ runId: r.id }), expected: expectedReplay(final) });
  }
  const file = path.join(here, 'golden', `${scenario.file}.json`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify({ description: scenario.description, recordedBy: 'test/replay/record-golden.ts', runs }, null, 2)}\n`);
  return `${scenario.file}: ${runs.map((r) => `${r.run.workflowName} ${r.run.status} (${r.entries.length} entries)`).join(', ')}`;
}

const only = new Set(process.argv.slice(2));
for (const scenario of scenarios) {
  if (only.size > 0 && !only.has(scenario.file)) continue;
  console.log(await record(scenario));
}
