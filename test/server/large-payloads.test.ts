import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from 'waymark';
import { toBinary } from '@bufbuild/protobuf';
import { GetJournalResponseSchema } from '../../src/gen/waymark/v1/run_service_pb.js';
import type { JournalEntry } from '../../src/gen/waymark/v1/run_pb.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { JournalStore } from '../../src/store/store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { apiHarness, json, plain } from './api-harness.js';

/*
 * A run with ten 5 MiB results (issue 35, docs/journal.md "Large payloads"), on both stores:
 * GetJournal pages it by reference in a few KiB, hands the payloads out a few MiB a page when asked,
 * and a resume on another replica, which reads the journal from the store (no hot resume cache
 * there), replays every result as the first execution saw it and runs no step again.
 */

const MiB = 1024 * 1024;
const LIMITS = { payloadBytes: 16 * MiB };
/** The i-th result: 5 MiB of JSON text, unlike every other. */
const result = (i: number) => `${i}:`.padEnd(5 * MiB - 2, String.fromCharCode(97 + i));
const digest = (values: string[]) => createHash('sha256').update(values.join('|')).digest('hex');
const executed: number[] = [];

const bigResults = defineWorkflow({ name: 'big-results', input: z.object({}) }, async (ctx) => {
  const seen: string[] = [];
  for (let i = 0; i < 5; i++) seen.push(await ctx.step(`big-${i}`, () => (executed.push(i), result(i))));
  await ctx.signal('go');
  for (let i = 5; i < 10; i++) seen.push(await ctx.step(`big-${i}`, () => (executed.push(i), result(i))));
  return { results: seen.length, digest: digest(seen) };
});

let db: MigratedDatabase;
const opened: PostgresStore[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase();
});

afterAll(async () => {
  for (const s of opened) await s.close();
  await db?.drop();
});

const stores: [string, () => Promise<JournalStore>][] = [
  ['memory', async () => new MemoryStore({ limits: LIMITS })],
  ['postgres', async () => {
    const s = await PostgresStore.connect({ url: db.url, limits: LIMITS, applicationName: 'large-payloads' });
    opened.push(s);
    return s;
  }],
];

describe.each(stores)('a run with ten 5 MiB results (%s)', (_name, open) => {
  it('pages by reference, pages whole payloads a few MiB at a time, and resumes elsewhere with the same results', async () => {
    const store = await open();
    executed.length = 0;
    const a = apiHarness({ store, limits: LIMITS, items: [bigResults] });
    const started = await a.runs.startRun({ workflow: 'big-results', input: json({}), wait: true });
    const runId = started.run!.id;
    expect(executed).toEqual([0, 1, 2, 3, 4]);

    // Another replica takes the signal and resumes the run: it reads the journal from the store.
    const b = apiHarness({ store, limits: LIMITS, items: [bigResults] });
    const ended = b.executionEnded(runId, ['succeeded', 'failed']);
    await b.signals.sendSignal({ runId, name: 'go', payload: json({}), signalId: 'go-1' });
    expect((await ended).outcome).toBe('succeeded');
    expect(executed).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const expected = Array.from({ length: 10 }, (_, i) => result(i));
    expect(plain((await b.runs.getRun({ runId })).run!.output)).toEqual({ results: 10, digest: digest(expected) });

    // By reference (the default): the whole journal in one page of a few KiB.
    const page = await b.runs.getJournal({ runId, pageSize: 100 });
    expect(page.nextPageToken).toBe('');
    const big = page.entries.filter((e) => e.payloadRef);
    expect(big.map((e) => e.name)).toEqual(expected.map((_, i) => `big-${i}`));
    expect(big.every((e) => e.payload === undefined && e.payloadRef!.sizeBytes === BigInt(5 * MiB))).toBe(true);
    expect(big[0]!.payloadRef!.sha256).toBe(createHash('sha256').update(JSON.stringify(result(0))).digest('hex'));
    expect(toBinary(GetJournalResponseSchema, page).length).toBeLessThan(16 * 1024);

    // An event stream of the run carries them by reference too.
    const streamed: JournalEntry[] = [];
    for await (const { event } of b.runs.streamRunEvents({ runId })) if (event?.body.case === 'entry') streamed.push(event.body.value);
    expect(streamed.filter((e) => e.payloadRef).map((e) => e.name)).toEqual(big.map((e) => e.name));
    expect(streamed.filter((e) => e.payloadRef).every((e) => e.payload === undefined)).toBe(true);
    // With include_large_payloads the stream carries each result itself, as recorded.
    const inline: JournalEntry[] = [];
    for await (const { event } of b.runs.streamRunEvents({ runId, includeLargePayloads: true })) if (event?.body.case === 'entry') inline.push(event.body.value);
    expect(inline.map((e) => e.seq)).toEqual(streamed.map((e) => e.seq));
    expect(inline.some((e) => e.payloadRef)).toBe(false);
    expect(inline.filter((e) => e.name.startsWith('big-')).map((e) => plain(e.payload))).toEqual(expected);

    // Whole: every payload, pages cut near 4 MiB of them (one 5 MiB result a page at most, plus small entries).
    const whole: JournalEntry[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const next = await b.runs.getJournal({ runId, pageSize: 100, pageToken, includeLargePayloads: true });
      expect(next.entries.filter((e) => e.payloadRef === undefined && e.name.startsWith('big-') && e.payload).length).toBeLessThanOrEqual(1);
      expect(toBinary(GetJournalResponseSchema, next).length).toBeLessThan(6 * MiB);
      whole.push(...next.entries);
      pageToken = next.nextPageToken;
      pages++;
    } while (pageToken);
    expect(pages).toBeGreaterThanOrEqual(10);
    expect(whole.map((e) => e.seq)).toEqual(page.entries.map((e) => e.seq));
    expect(whole.filter((e) => e.name.startsWith('big-') && e.status === 2).map((e) => plain(e.payload))).toEqual(expected);
    expect(whole.some((e) => e.payloadRef)).toBe(false);
  }, 120_000);
});
