// Large payloads (issue 35, docs/journal.md "Large payloads"): a run of ten 5 MiB step results
// against the same run with 16-byte results, and against the same large run stored the old way
// (WAYMARK_PAYLOAD_INLINE_BYTES above 5 MiB: every result in its journal row, TOASTed). Each run is
// built in process and parks on a signal; then GetJournal's first page is read (by reference, as
// GetJournal answers by default, and with include_large_payloads) and the run is resumed in a fresh
// process (bench/replay-child.ts), which replays all ten results from the store. The results are
// base64 of random bytes, as a document or an image would be: PostgreSQL cannot compress them away.
// Alone: `node --import tsx bench/payloads.ts [reps]`.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { defineWorkflow } from '../src/engine/author/workflow.js';
import { journalPage } from '../src/engine/read/journal-page.js';
import { runAlone } from './postgres.js';
import { resumeInChild } from './replay.js';
import { fmt, median, percentile } from './stats.js';
import { openEngine, type EngineBench } from './waymark-inprocess.js';

const MiB = 1024 * 1024;
/** A server that takes 5 MiB results raises the hard limit (WAYMARK_MAX_PAYLOAD_BYTES); 16 MiB here. */
export const PAYLOAD_LIMITS = { payloadBytes: 16 * MiB };
export const RESULTS = 10;
export const LARGE_BYTES = 5 * MiB;
export const SMALL_BYTES = 16;

/** `count` steps whose results are `bytes` of JSON text each (random base64), then a wait for `go`. */
export const resultsRun = defineWorkflow({ name: 'bench-results-run', input: z.object({ count: z.number(), bytes: z.number() }) }, async (ctx, { count, bytes }) => {
  let total = 0;
  // A JSON string's text is its characters plus two quotes.
  for (let i = 0; i < count; i++) total += (await ctx.step(`result-${i}`, () => randomBytes(bytes).toString('base64').slice(0, bytes - 2))).length;
  await ctx.signal('go');
  return { total };
});

export interface PayloadFigure {
  /** Resume (signal to end, in a fresh process) of the run with large results, and of the small one. */
  largeResumeMs: number; smallResumeMs: number;
  largePeakRssMb: number; smallPeakRssMb: number;
  /** GetJournal's first page (100 entries) by reference: p50 over `reads` reads, and its size as JSON. */
  largePageP50Ms: number; smallPageP50Ms: number; largePageBytes: number;
  /** The same page with include_large_payloads (it ends after about 4 MiB of payloads). */
  inlinePageP50Ms: number; inlinePageEntries: number;
  /** The run's bytes in journal rows and in payload rows. */
  journalBytes: number; payloadBytes: number;
  /** The large run stored inline (the way before out-of-line payloads): resume, and GetJournal's first page and its size. */
  inlineStoredResumeMs: number; inlineStoredPeakRssMb: number; inlineStoredPageP50Ms: number; inlineStoredPageBytes: number;
}

async function parkedRun(bench: EngineBench, bytes: number): Promise<string> {
  const { run } = await bench.engine.runStart({ namespace: 'bench', workflowName: resultsRun.name, input: { count: RESULTS, bytes }, execute: true });
  const parked = await bench.store.runGet({ runId: run.id, namespace: 'bench' });
  if (parked.status !== 'SUSPENDED') throw new Error(`results run is ${parked.status}, expected SUSPENDED`);
  return run.id;
}

async function firstPage(bench: EngineBench, runId: string, reads: number, includeLargePayloads: boolean) {
  const ms: number[] = [];
  let page = await journalPage(bench.store, { runId, namespace: 'bench', afterSeq: -1, pageSize: 100, pageToken: '', includeLargePayloads });
  for (let i = 0; i < reads; i++) {
    const t = performance.now();
    page = await journalPage(bench.store, { runId, namespace: 'bench', afterSeq: -1, pageSize: 100, pageToken: '', includeLargePayloads });
    ms.push(performance.now() - t);
  }
  return { p50Ms: percentile(ms, 50), bytes: Buffer.byteLength(JSON.stringify(page.entries)), entries: page.entries.length };
}

async function resumed(url: string, runId: string) {
  const out = JSON.parse((await resumeInChild(url, runId)).trim().split('\n').pop()!) as { ms: number; peakRssMb: number };
  return out;
}

/** `reps` pairs of runs (large, small), alternating; medians. */
export async function measurePayloads(url: string, reps: number, reads = 20): Promise<PayloadFigure> {
  const bench = await openEngine(url, [resultsRun], { limits: PAYLOAD_LIMITS });
  const before = await openEngine(url, [resultsRun], { limits: { ...PAYLOAD_LIMITS, payloadInlineBytes: 64 * MiB } });
  try {
    const figures: PayloadFigure[] = [];
    for (let r = 0; r < reps; r++) {
      const large = await parkedRun(bench, LARGE_BYTES);
      const small = await parkedRun(bench, SMALL_BYTES);
      const largeRef = await firstPage(bench, large, reads, false);
      const smallRef = await firstPage(bench, small, reads, false);
      const inline = await firstPage(bench, large, Math.max(3, Math.floor(reads / 4)), true);
      const old = await parkedRun(before, LARGE_BYTES);
      const oldPage = await firstPage(before, old, Math.max(3, Math.floor(reads / 4)), false);
      const oldResume = await resumed(url, old);
      const { rows } = await bench.store.pool.query<{ journal: string; payloads: string }>(
        `SELECT (SELECT COALESCE(sum(pg_column_size(j.*)), 0) FROM journal j WHERE run_id = $1)::text AS journal,
                (SELECT COALESCE(sum(pg_column_size(p.*)), 0) FROM payloads p WHERE run_id = $1)::text AS payloads`, [large]);
      const largeResume = await resumed(url, large);
      const smallResume = await resumed(url, small);
      figures.push({
        largeResumeMs: largeResume.ms, smallResumeMs: smallResume.ms, largePeakRssMb: largeResume.peakRssMb, smallPeakRssMb: smallResume.peakRssMb,
        largePageP50Ms: largeRef.p50Ms, smallPageP50Ms: smallRef.p50Ms, largePageBytes: largeRef.bytes,
        inlinePageP50Ms: inline.p50Ms, inlinePageEntries: inline.entries,
        journalBytes: Number(rows[0]!.journal), payloadBytes: Number(rows[0]!.payloads),
        inlineStoredResumeMs: oldResume.ms, inlineStoredPeakRssMb: oldResume.peakRssMb, inlineStoredPageP50Ms: oldPage.p50Ms, inlineStoredPageBytes: oldPage.bytes,
      });
    }
    const out: Record<string, number> = {};
    for (const key of Object.keys(figures[0]!)) out[key] = median(figures.map((f) => f[key as keyof PayloadFigure]));
    return out as unknown as PayloadFigure;
  } finally {
    await bench.close();
    await before.close();
  }
}

/** The bench table's rows for a PayloadFigure: measurement, throughput, p50 ms, p99 ms. */
export function payloadRows(f: PayloadFigure): string[][] {
  return [
    [`replay: large payloads: resume a run of ${RESULTS} results of 5 MiB / of 16 B (fresh process)`,
      `${fmt(f.largeResumeMs, 0)} ms / ${fmt(f.smallResumeMs, 0)} ms`, `peak RSS ${fmt(f.largePeakRssMb, 0)} / ${fmt(f.smallPeakRssMb, 0)} MB`, ''],
    [`replay: the same 5 MiB run stored inline in its journal rows (WAYMARK_PAYLOAD_INLINE_BYTES = 64 MiB)`,
      `${fmt(f.inlineStoredResumeMs, 0)} ms`, `peak RSS ${fmt(f.inlineStoredPeakRssMb, 0)} MB`, ''],
    [`GetJournal first page (100 entries) of the 5 MiB run, by reference / of the 16 B run`,
      `${fmt(f.largePageBytes / 1024, 1)} KiB of entries`, `${fmt(f.largePageP50Ms, 2)} / ${fmt(f.smallPageP50Ms, 2)}`, ''],
    [`GetJournal first page (100 entries) of the 5 MiB run stored inline`,
      `${fmt(f.inlineStoredPageBytes / MiB, 1)} MiB of entries`, fmt(f.inlineStoredPageP50Ms, 2), ''],
    ['GetJournal first page of the 5 MiB run with include_large_payloads (ends at the result that reaches 4 MiB)',
      `${fmt(f.inlinePageEntries, 0)} entries`, fmt(f.inlinePageP50Ms, 2), ''],
    ['large payloads: bytes of the 5 MiB run in journal rows / in payload rows',
      `${fmt(f.journalBytes / 1024, 1)} KiB / ${fmt(f.payloadBytes / MiB, 2)} MiB`, '', ''],
  ];
}

await runAlone(import.meta.url, async (db) => {
  const f = await measurePayloads(await db.create('bench_payloads'), Number(process.argv[2] ?? 1));
  console.log(JSON.stringify(f, null, 2));
  for (const r of payloadRows(f)) console.log(`| ${r.join(' | ')} |`);
});
