// The web console's bench row: the run page of a run with 10,000 journal entries, loaded in
// headless Chromium (Debian's chromium, driven by playwright-core) from a `waymark server`, timed
// from navigation start to its first screen of timeline rows (the first GetJournal page drawn
// through the virtualised list), in a fresh browser context each time (nothing cached). Also: until
// all 10,000 entries are loaded behind it, and how many rows the page holds in its DOM.
// Run alone: node --import tsx bench/console.ts (BENCH_QUICK=1 for fewer loads; BENCH_CONSOLE_DEBUG=1
// prints each load's marks and request timings).
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { ApiKeys } from '../src/engine/access/api-keys.js';
import { longRun } from './replay.js';
import { startServer } from './grpc.js';
import { openBenchDatabase } from './postgres.js';
import { fmt } from './stats.js';
import { openEngine } from './waymark-inprocess.js';

const CHROMIUM = process.env.WAYMARK_CHROMIUM ?? '/usr/bin/chromium';
/** A first screen: this many timeline rows drawn (the list shows about 20 at 860 px). */
const FIRST_SCREEN_ROWS = 15;

export interface ConsoleFigures {
  entries: number;
  loads: number;
  firstScreenP50Ms: number;
  firstScreenMaxMs: number;
  /** GetJournal requests the page had started before its first screen was seen (median). */
  readsAtFirstScreen: number;
  /** Main-thread busy time until the first screen (CDP Performance TaskDuration). */
  mainThreadP50Ms: number;
  allEntriesP50Ms: number;
  domRows: number;
}

export async function measureConsole(url: string, entries: number, loads: number): Promise<ConsoleFigures> {
  const bench = await openEngine(url, [longRun]);
  const server = await startServer(url, { WAYMARK_AUTH: 'on' });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  try {
    // The run's own entries around its steps: RUNNING, the signal's suspension, SUSPENDED.
    const { run } = await bench.engine.runStart({ namespace: 'default', workflowName: longRun.name, input: { steps: entries - 3, batch: 200 }, execute: true });
    const { secret } = await new ApiKeys({ store: bench.store }).create({ name: 'bench console', namespace: null, scopes: ['runs:read'], createdByKeyId: null });
    const page = `http://${server.address}/console/runs/${run.id}`;
    const first: number[] = [];
    const all: number[] = [];
    const busy: number[] = [];
    const reads: number[] = [];
    let domRows = 0;
    for (let i = 0; i < loads; i++) {
      const context = await browser.newContext({ viewport: { width: 1366, height: 860 } });
      // Signed in as the sign-in form leaves it (docs/console.md "Signing in"); page code as strings: this file is Node's.
      await context.addInitScript(`sessionStorage.setItem('waymark.console.credential', ${JSON.stringify(secret)})`);
      const tab = await context.newPage();
      // The main thread's busy time (Chrome's TaskDuration): what the page itself costs, apart
      // from the server's answers and from other processes taking this machine's cores.
      const cdp = await context.newCDPSession(tab);
      await cdp.send('Performance.enable');
      await tab.goto(page, { waitUntil: 'commit' });
      // performance.now() is milliseconds since this navigation started.
      // Functions, not strings: a string predicate is eval'd in the page, which its CSP refuses.
      first.push(await (await tab.waitForFunction((n) => (globalThis as any).document.querySelectorAll('.tl-row').length >= n && performance.now(), FIRST_SCREEN_ROWS, { polling: 'raf', timeout: 60_000 })).jsonValue() as number);
      const metrics = (await cdp.send('Performance.getMetrics')).metrics;
      busy.push((metrics.find((m) => m.name === 'TaskDuration')?.value ?? 0) * 1000);
      all.push(await (await tab.waitForFunction((n) => [...(globalThis as any).document.querySelectorAll('.facts-grid dt')].find((d: any) => d.textContent === 'Entries')?.nextElementSibling?.textContent === String(n) && performance.now(),
        entries, { polling: 100, timeout: 120_000 })).jsonValue() as number);
      domRows = await tab.evaluate(`document.querySelectorAll('.tl-row').length`) as number;
      // By the page's own clock: the GetJournal requests started before its first screen was seen.
      reads.push(await tab.evaluate((t) => performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/GetJournal') && e.startTime < t).length, first.at(-1)!));
      if (process.env.BENCH_CONSOLE_DEBUG) {
        const timings = `[...performance.getEntriesByType('mark'), ...performance.getEntriesByType('resource').slice(0, 6)].map((e) => [e.name.split('/').pop(), Math.round(e.startTime), Math.round(e.duration)])`;
        process.stderr.write(`${JSON.stringify(await tab.evaluate(timings))}\n`);
      }
      await context.close();
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    return { entries, loads, firstScreenP50Ms: median(first), firstScreenMaxMs: Math.max(...first), mainThreadP50Ms: median(busy), allEntriesP50Ms: median(all), domRows, readsAtFirstScreen: median(reads) };
  } finally {
    await browser.close();
    await server.stop();
    await bench.close();
  }
}

export function consoleRow(f: ConsoleFigures): string[] {
  return [`console: run page of a ${f.entries.toLocaleString('en')}-entry run, first screen (p50 / max of ${f.loads} cold loads; main thread busy p50)`,
    `${fmt(f.firstScreenP50Ms, 0)} ms (busy ${fmt(f.mainThreadP50Ms, 0)} ms)`, fmt(f.firstScreenP50Ms, 0), fmt(f.firstScreenMaxMs, 0)];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const db = await openBenchDatabase();
  try {
    const f = await measureConsole(await db.create('bench_console'), 10_000, process.env.BENCH_QUICK === '1' ? 3 : 7);
    process.stdout.write(`${JSON.stringify(f)}\n${consoleRow(f).join(' | ')}\n`);
  } finally {
    await db.close();
  }
}
