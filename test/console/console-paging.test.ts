import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { expectAccessible, haveChromium, launch, openTab, signIn, type Tab } from './browser.js';
import { ConsoleStack } from './console-stack.js';

/*
 * The run page of a 10,000-entry run reads its journal in pages (docs/console.md "Performance";
 * the bench row bench/console.ts times it): its first screen is drawn from the first page alone,
 * nothing more is read while it sits there, and the next pages come as the list is scrolled
 * towards their rows or when an export needs the whole journal; a live run's page asks for its
 * second page only after its first screen is in. Counted by the GetJournal requests the page makes
 * and by the entries it says it holds, and ordered by the page's clock; no duration is asserted.
 */

const TIMEOUT = 300_000;
const GET_JOURNAL = '/waymark.v1.RunService/GetJournal';
let stack: ConsoleStack;
let browser: Browser;
let tab: Tab | undefined;

beforeAll(async () => {
  if (!haveChromium()) throw new Error('no Chromium at /usr/bin/chromium: run `bash scripts/setup-browser.sh` (npm test runs it through scripts/setup-test-tools.sh)');
  [stack, browser] = await Promise.all([ConsoleStack.start('waymark_console_paging'), launch()]);
}, TIMEOUT);

afterAll(async () => {
  await tab?.context.close().catch(() => undefined);
  await browser?.close();
  await stack?.stop();
}, TIMEOUT);

describe('a 10,000-entry run page', () => {
  it('draws its first screen from one page of the journal and reads more only as the list scrolls', { timeout: TIMEOUT }, async () => {
    const client = stack.client();
    const { run } = await client.startRun('long', { entries: 10_000 }, { wait: true, timeoutMs: 240_000 });
    const total = Number(run.nextSeq);
    expect(total).toBeGreaterThanOrEqual(10_000);

    tab = await openTab(browser);
    await signIn(tab, stack.base, stack.adminKey);
    const reads: string[] = [];
    tab.page.on('request', (r) => {
      if (new URL(r.url()).pathname === GET_JOURNAL) reads.push(r.headers()['content-type'] ?? '');
    });
    const entries = () => tab!.page.locator('.facts-grid div').filter({ hasText: 'Entries' }).locator('dd').textContent();

    await tab.page.goto(`${stack.base}runs/${run.id}`);
    await tab.page.locator('.tl-row').nth(14).waitFor();
    // Once nothing is in flight (no request for 500 ms): still the first page only.
    await tab.page.waitForLoadState('networkidle');
    expect(reads).toHaveLength(1);
    expect(await entries()).toBe(`100 of ${total} loaded`);
    expect(await tab.page.locator('.tl-row').count()).toBeLessThan(60);

    // The timeline scrolled to the end of what is loaded reads the next page, one at a time.
    const timeline = tab.page.getByRole('list', { name: 'Timeline of effects' });
    await timeline.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
    await expect.poll(entries, { timeout: 60_000 }).toBe(`1100 of ${total} loaded`);
    expect(reads).toHaveLength(2);
    await timeline.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
    await expect.poll(entries, { timeout: 60_000 }).toBe(`2100 of ${total} loaded`);
    expect(reads).toHaveLength(3);
    await expectAccessible(tab.page, 'a partly loaded 10,000-entry run');

    // An export needs the whole journal: it reads the rest, then saves every entry.
    const [download] = await Promise.all([tab.page.waitForEvent('download', { timeout: 120_000 }), tab.page.getByRole('button', { name: 'Export journal' }).click()]);
    const file = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { entries: { seq?: string }[] };
    // The protobuf JSON mapping leaves out a zero: entry 0 has no seq field.
    expect(file.entries.map((e) => Number(e.seq ?? 0))).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(await entries()).toBe(String(total));
    expect(reads.length).toBe(3 + Math.ceil((total - 2100) / 1000));
    expect(tab.errors).toEqual([]);
  });

  it("draws a live 10,000-entry run's first screen before it asks for a second page, then reads the rest and follows", { timeout: TIMEOUT }, async () => {
    const client = stack.client();
    const { run } = await client.startRun('long', { entries: 10_000, park: true }, { wait: true, timeoutMs: 240_000 });
    expect(run.status).toBe(3); // SUSPENDED on the signal: the page follows it live
    const live = await openTab(browser);
    try {
      await signIn(live, stack.base, stack.adminKey);
      // The page's own clock when its first screen's rows enter the DOM: a MutationObserver's
      // callback runs right after the change that adds them, before anything the page does next.
      await live.context.addInitScript(`new MutationObserver((_, observer) => {
        if (document.querySelectorAll('.tl-row').length < 15) return;
        window.firstScreenAt = performance.now();
        observer.disconnect();
      }).observe(document, { childList: true, subtree: true })`);
      await live.page.goto(`${stack.base}runs/${run.id}`);
      await live.page.locator('.tl-row').nth(14).waitFor();
      const firstScreen = await live.page.evaluate(() => (globalThis as { firstScreenAt?: number }).firstScreenAt);
      expect(firstScreen).toBeGreaterThan(0);
      const entries = live.page.locator('.facts-grid div').filter({ hasText: 'Entries' }).locator('dd');
      await expect.poll(() => entries.textContent(), { timeout: 120_000 }).toBe(String(run.nextSeq));
      await live.page.locator('.live', { hasText: 'live' }).waitFor();
      // Every page was read, but only the first had been asked for when the first screen was in the DOM.
      const starts = await live.page.evaluate(() => performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/GetJournal')).map((e) => e.startTime));
      expect(starts.length).toBe(1 + Math.ceil((Number(run.nextSeq) - 100) / 1000));
      expect(starts.filter((t) => t < firstScreen!)).toHaveLength(1);
      // It follows: the signal's entries arrive on the page.
      await client.sendSignal(run.id, 'go', {});
      await live.page.locator('.page-head .badge.s-succeeded').waitFor({ timeout: 60_000 });
      expect(live.errors).toEqual([]);
    } finally {
      await live.context.close();
    }
  });
});
