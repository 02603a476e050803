import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FlowDefinition } from '../../src/engine/flow/flow-definition.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { EffectSink } from './support/effect-sink.js';
import { chaosEnv, Driver, startServer, startSweeper } from './support/cluster.js';

/*
 * A declarative flow under SIGKILL (docs/flows.md "Running a flow"): a server running a flow run
 * dies at an effect boundary (WAYMARK_CRASHPOINT); the sweeper recovers the run once its lease
 * expires and a fresh replica finishes it. The flow is registered in the store, not loaded by
 * either server, so the replica serves it from the store alone. The flow: a tool, an approval the
 * sweeper times out (approve), a branch on the decision, two more tools, an end. The sink, not the
 * journal, says whether each effect was applied exactly once.
 */

const FLOW: FlowDefinition = {
  name: 'chaos-flow',
  stateSchema: { type: 'object', properties: { sink: { type: 'string' }, tag: { type: 'string' }, decision: { type: 'object' }, a: {}, b: {}, c: {} } },
  start: 'a',
  nodes: [
    { id: 'a', tool: { tool: 'sink_post', arguments: { sink: '{{ state.sink }}', effect: '{{ state.tag }}:a' }, into: 'a' } },
    { id: 'ok', approval: { title: 'Go on with {{ state.tag }}?', deadline: '1s', onTimeout: 'APPROVAL_TIMEOUT_DECISION_APPROVE', into: 'decision' } },
    { id: 'approved', branch: {} },
    { id: 'b', tool: { tool: 'sink_post', arguments: { sink: '{{ state.sink }}', effect: '{{ state.tag }}:b' }, into: 'b' } },
    { id: 'c', tool: { tool: 'sink_post', arguments: { sink: '{{ state.sink }}', effect: '{{ state.tag }}:c' }, into: 'c' } },
    { id: 'done', end: { output: { approved: '{{ state.decision.approved }}', c: '{{ state.c.applied }}' } } },
    { id: 'declined', end: {} },
  ],
  edges: [
    { from: 'a', to: 'ok' }, { from: 'ok', to: 'approved' },
    { from: 'approved', to: 'b', condition: 'state.decision.approved' }, { from: 'approved', to: 'declined' },
    { from: 'b', to: 'c' }, { from: 'c', to: 'done' },
  ],
};
const CELLS = ['tool:after-execute:1', 'tool:after-intent:2', 'tool:before-intent:3', 'tool:after-terminal:3'];

let db: TestDatabase;
let driver: Driver;
let sink: EffectSink;
let sweeper: WaymarkProcess;

beforeAll(async () => {
  db = await createTestDatabase('waymark_chaos_flows');
  sink = await EffectSink.start();
  sweeper = await startSweeper(chaosEnv(db.url)); // migrates the database too
  driver = await Driver.open(db.url);
  await driver.engine.flows.register({ namespace: 'default', flow: FLOW });
});

afterAll(async () => {
  await sweeper?.stop();
  await driver?.close();
  await sink?.close();
  await db?.drop();
});

describe('a flow run under SIGKILL', () => {
  it(`${CELLS.length} crash points: the replica finishes the run from the store's flow, every effect applied once`, async () => {
    const lines: string[] = [];
    for (const [i, crashpoint] of CELLS.entries()) {
      const tag = `f${i}`;
      const runId = await driver.start('chaos-flow', { sink: sink.url, tag });
      const crashing = await startServer(chaosEnv(db.url, { WAYMARK_CRASHPOINT: crashpoint }));
      const exit = await crashing.exited;
      expect(exit.signal, crashpoint).toBe('SIGKILL');
      const replica = await startServer(chaosEnv(db.url));
      try {
        await driver.waitEnded([runId], 120_000);
      } finally {
        await replica.stop();
      }
      const run = await driver.store.runGet({ runId, namespace: 'default' });
      const figures = sink.figures([`${tag}:a`, `${tag}:b`, `${tag}:c`], `${tag}:`);
      lines.push(`${crashpoint} duplicates=${figures.duplicates} lost=${figures.lost} redundant=${figures.redundant}`);
      expect(run.status, crashpoint).toBe('SUCCEEDED');
      expect(run.output, crashpoint).toEqual({ approved: true, c: true });
      expect({ duplicates: figures.duplicates, lost: figures.lost, unkeyed: figures.unkeyed }, crashpoint).toEqual({ duplicates: 0, lost: 0, unkeyed: 0 });
      expect(await driver.journalViolations([runId]), crashpoint).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
      const nodes = (await driver.store.journalList({ runId })).filter((e) => e.kind === 'emit' && (e.payload as { type?: string }).type === 'flow.node');
      expect(nodes.map((e) => (e.payload as { node: string }).node), crashpoint).toEqual(['a', 'ok', 'approved', 'b', 'c', 'done']);
    }
    console.log(`chaos: flows ${lines.join('; ')}`);
  }, 90_000 + CELLS.length * 45_000);
});
