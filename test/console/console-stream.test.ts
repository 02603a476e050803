import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { expectAccessible, haveChromium, launch, openTab, screenshot, signIn, type Tab } from './browser.js';
import { ConsoleStack } from './console-stack.js';

/*
 * The run page's live stream across a server restart (docs/console.md "Live updates"): the page
 * follows a run (StreamRunEvents), the server is stopped and started again on the same address,
 * the run moves on while the page is disconnected and after, and the page reconnects from the last
 * seq it had: every seq arrives once, none is missing, and the page ends with the run's end.
 */

const TIMEOUT = 240_000;
let stack: ConsoleStack;
let browser: Browser;
let tab: Tab | undefined;

beforeAll(async () => {
  if (!haveChromium()) throw new Error('no Chromium at /usr/bin/chromium: run `bash scripts/setup-browser.sh` (npm test runs it through scripts/setup-test-tools.sh)');
  [stack, browser] = await Promise.all([ConsoleStack.start('waymark_console_stream'), launch()]);
}, TIMEOUT);

afterAll(async () => {
  await tab?.context.close().catch(() => undefined);
  await browser?.close();
  await stack?.stop();
}, TIMEOUT);

/** The seqs of the run's events on the page, in the order shown (the page's own reconnect notes left out). */
async function shownSeqs(t: Tab): Promise<number[]> {
  const texts = await t.page.getByRole('list', { name: 'Live events' }).locator('li:not(.note) .seq').allTextContents();
  return texts.map((s) => Number(s.replace('#', '')));
}

describe('the live stream on a run page', () => {
  it('survives a server restart without a gap or a repeat, and ends with the run', { timeout: TIMEOUT }, async () => {
    const { run } = await stack.client().startRun('feed', { ticks: 4 }, { wait: true });
    tab = await openTab(browser);
    await signIn(tab, stack.base, stack.adminKey);
    await tab.page.goto(`${stack.base}runs/${run.id}?tab=events`);
    await tab.page.getByText('Following the run live.').waitFor();

    await stack.client().sendSignal(run.id, 'tick', { n: 1 });
    await tab.page.getByText(/step add-0: entry ok/).waitFor();

    // Stopped while the page follows; the run moves on before the page is back.
    await stack.restart(async () => {
      await tab!.page.getByText(/reconnecting after seq \d+/).first().waitFor();
    });
    const client = stack.client();
    await client.sendSignal(run.id, 'tick', { n: 2 });
    await tab.page.getByText(/step add-1: entry ok/).waitFor({ timeout: 60_000 });
    await client.sendSignal(run.id, 'tick', { n: 3 });
    await client.sendSignal(run.id, 'tick', { n: 4 });
    await tab.page.getByText('run succeeded').waitFor({ timeout: 60_000 });

    const seqs = await shownSeqs(tab);
    const journal: bigint[] = [];
    for await (const e of client.journal(run.id)) journal.push(e.seq);
    const after = Number(journal.findIndex((s) => s === BigInt(seqs[0]!)));
    // Every seq from the first one shown to the last, once each, in order: no gap, no repeat.
    expect(seqs).toEqual(journal.slice(after).map(Number));
    expect(seqs.at(-1)).toBe(Number(journal.at(-1)));
    await expect.poll(() => tab!.page.getByRole('status').first().textContent()).toMatch(/Reconnected \d+×/);
    // The journal on the page is the server's, entry for entry.
    await tab.page.getByRole('tab', { name: 'Entries' }).click();
    await expect.poll(() => tab!.page.locator('.facts-grid').getByText('Entries').locator('..').textContent()).toContain(String(journal.length));
    await tab.page.getByRole('tab', { name: 'Live events' }).click();
    await expectAccessible(tab.page, 'live events after a restart');
    await screenshot(tab.page, 'run-events-restart');
    // What the page logged while the server was down is the dropped connection itself, nothing else.
    expect(tab.errors.filter((e) => !/ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE|net::ERR_|status of 503/.test(e))).toEqual([]);
  });
});
