import { toJson } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JournalEntrySchema, RunSchema } from '../../src/gen/waymark/v1/run_pb.js';
import { entryToProto } from '../../src/server/convert/convert-journal.js';
import { runToProto } from '../../src/server/convert/convert-run.js';
import { defineWorkflow, JournalExportError, MemoryStore, Registry, replayJournal, RunEngine, type Workflow, type WorkflowContext } from '../../src/index.js';

/*
 * replayJournal's verdicts on journals the engine really records (a RunEngine on the in-memory
 * store), exported in the format `waymark runs export` writes (the API's JSON of GetRun and
 * GetJournal, converted by the server's own converters). The order watch (runtime/call-order.ts)
 * must report a reorder of sequential calls and must not report concurrent calls whose journal
 * order differs from their call order; a journal edited to disagree with the code is
 * nondeterministic. The CLI and a real server: replay-cli.test.ts.
 */

type Body = (ctx: WorkflowContext) => Promise<unknown>;

const flow = (body: Body): Workflow => defineWorkflow({ name: 'flow', input: z.null() }, async (ctx) => body(ctx));

/** Runs `body` to its end on a fresh engine and returns the export of its journal, as parsed JSON. */
async function recorded(body: Body, options: { omitDefaults?: boolean } = {}): Promise<{ doc: any; names: string[] }> {
  const store = new MemoryStore();
  const engine = new RunEngine({ store, registry: new Registry().register(flow(body)), holder: 'test', leaseTtlMs: 30_000 });
  const { run } = await engine.runStart({ namespace: 'default', workflowName: 'flow', input: null, execute: true });
  const entries = await store.journalList({ runId: run.id });
  const finished = await store.runGet({ runId: run.id, namespace: 'default' });
  expect(finished.status).toBe('SUCCEEDED');
  // The CLI writes every field; the console's export (console/src/journal-file.ts) leaves defaults out.
  const emit = { alwaysEmitImplicit: options.omitDefaults !== true };
  const doc = {
    format: 'waymark.journal.v1', exportedAt: new Date().toISOString(),
    run: toJson(RunSchema, runToProto(finished), emit),
    entries: entries.map((e) => toJson(JournalEntrySchema, entryToProto(e), emit)),
  };
  return { doc, names: entries.filter((e) => e.kind === 'step' || e.kind === 'tool').map((e) => e.name) };
}

/** A gate a step waits on, opened by another step: makes the journal order differ from the call order. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

describe('replayJournal: the order of calls', () => {
  it('reports two sequential steps swapped, naming the step recorded first', async () => {
    const { doc } = await recorded(async (ctx) => {
      await ctx.step('reserve', async () => 1);
      await ctx.step('charge', async () => 2);
    });
    const same = await replayJournal([flow(async (ctx) => {
      await ctx.step('reserve', async () => 1);
      await ctx.step('charge', async () => 2);
    })], doc);
    expect(same).toMatchObject({ ok: true, outcome: 'succeeded', hits: 2 });
    const swapped = await replayJournal([flow(async (ctx) => {
      await ctx.step('charge', async () => 2);
      await ctx.step('reserve', async () => 1);
    })], doc);
    const reserve = doc.entries.find((e: any) => e.name === 'reserve');
    expect(swapped.ok).toBe(false);
    expect(swapped.divergences).toEqual([expect.objectContaining({ verdict: 'reordered', seq: Number(reserve.seq), kind: 'step', name: 'reserve' })]);
  });

  it('accepts Promise.all calls whose journal order is not their call order, and the sequential call after them', async () => {
    const body: Body = async (ctx) => {
      const g = gate();
      await Promise.all([ctx.step('slow', async () => (await g.wait, 'a')), ctx.step('fast', async () => (g.open(), 'b'))]);
      await ctx.step('after', async () => 'c');
    };
    const { doc, names } = await recorded(body);
    expect(names).toEqual(['fast', 'slow', 'after']); // the negative control: called slow first, journaled fast first
    expect(await replayJournal([flow(body)], doc)).toMatchObject({ ok: true, divergences: [], hits: 3 });
  });

  it('accepts a call that was alone when made but recorded after the chain that ran beside it', async () => {
    // x is made first, alone; a and then y run beside it, and y opens x's gate: journal a, y, x.
    // Replay settles x before y is made, so only marking x concurrent once a joined it keeps y from
    // being taken for a call moved after x.
    const body: Body = async (ctx) => {
      const g = gate();
      await Promise.all([
        ctx.step('x', async () => (await g.wait, 1)),
        (async () => {
          await ctx.step('a', async () => 2);
          await ctx.step('y', async () => (g.open(), 3));
        })(),
      ]);
    };
    const { doc, names } = await recorded(body);
    expect(names).toEqual(['a', 'y', 'x']);
    expect(await replayJournal([flow(body)], doc)).toMatchObject({ ok: true, divergences: [], hits: 3 });
  });

  it('accepts chains running side by side in one scope, and ctx.parallel branches, whatever finished first', async () => {
    const body: Body = async (ctx) => {
      const g = gate();
      await Promise.all([
        (async () => {
          await ctx.step('a1', async () => 1);
          await ctx.step('a2', async () => (g.open(), 2));
        })(),
        ctx.step('b', async () => (await g.wait, 3)),
      ]);
      await ctx.parallel([
        async (branch) => [await branch.step('x1', async () => 1), await branch.step('x2', async () => 2)],
        async (branch) => branch.step('y', async () => 3),
      ]);
    };
    const { doc, names } = await recorded(body);
    expect(names.slice(0, 3)).toEqual(['a1', 'a2', 'b']);
    expect(await replayJournal([flow(body)], doc)).toMatchObject({ ok: true, divergences: [], hits: 6 });
  });
});

describe('replayJournal: other verdicts', () => {
  const steps: Body = async (ctx) => {
    await ctx.step('reserve', async () => 1);
    await ctx.step('charge', async () => 2);
  };

  it('a journal whose entry names another effect under the call\'s content key is nondeterministic', async () => {
    const { doc } = await recorded(steps);
    const charge = doc.entries.find((e: any) => e.name === 'charge');
    charge.name = 'charge_card';
    const report = await replayJournal([flow(steps)], doc);
    expect(report.divergences[0]).toMatchObject({ verdict: 'nondeterministic', seq: Number(charge.seq), kind: 'step', name: 'charge_card' });
    expect(report.divergences[0]!.message).toContain('the code called step "charge" but the journal has step "charge_card"');
  });

  it('a removed call leaves an orphan: accepted, and refused with strict', async () => {
    const { doc } = await recorded(steps);
    const removed = flow(async (ctx) => ctx.step('reserve', async () => 1));
    const loose = await replayJournal([removed], doc);
    expect(loose).toMatchObject({ ok: true, orphaned: 1 });
    expect(loose.notes).toContain(`step "charge" (seq ${doc.entries.find((e: any) => e.name === 'charge').seq}) is orphaned: no call consumed it, a resume never re-executes it`);
    const strict = await replayJournal([removed], doc, { strict: true });
    expect(strict.divergences).toEqual([expect.objectContaining({ verdict: 'orphaned', kind: 'step', name: 'charge' })]);
  });

  it('reads the console\'s export, which leaves fields at their default out', async () => {
    const { doc } = await recorded(steps, { omitDefaults: true });
    expect(doc.entries[0].seq).toBeUndefined();
    expect(await replayJournal([flow(steps)], JSON.stringify(doc))).toMatchObject({ ok: true, hits: 2, recordedStatus: 'SUCCEEDED' });
  });

  it('refuses a file of another version or with a gap in its seqs', async () => {
    const { doc } = await recorded(steps);
    await expect(replayJournal([flow(steps)], { ...doc, format: 'waymark.journal.v2' })).rejects.toThrow(JournalExportError);
    await expect(replayJournal([flow(steps)], { ...doc, format: 'waymark.journal.v2' })).rejects.toThrow(/it is format waymark.journal.v2 and this reader knows waymark.journal.v1/);
    await expect(replayJournal([flow(steps)], { ...doc, entries: doc.entries.slice(1) })).rejects.toThrow(/has seq 1; an export holds the whole journal/);
    await expect(replayJournal([flow(steps)], '{"format":')).rejects.toThrow(/it is not JSON/);
  });
});
