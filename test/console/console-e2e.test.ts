import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { JsonValue } from '@bufbuild/protobuf';
import type { Browser } from 'playwright-core';
import { expectAccessible, haveChromium, launch, LAPTOP, openTab, PHONE, screenshot, signIn, type Tab } from './browser.js';
import { ConsoleStack } from './console-stack.js';

/*
 * The web console in headless Chromium against a live `waymark dev` (docs/console.md): signing
 * in, a parked run approved in the inbox and watched to the end on its timeline, two reviewers
 * deciding one approval, a namespace key that sees nothing of another namespace, every page at a
 * laptop and a phone width, by keyboard, checked by axe, with no console error (a CSP refusal is
 * one), and screenshots of each page into docs/console/.
 */

const TIMEOUT = 180_000;
let stack: ConsoleStack;
let browser: Browser;
const tabs: Tab[] = [];

async function tab(viewport = LAPTOP): Promise<Tab> {
  const t = await openTab(browser, { viewport });
  tabs.push(t);
  return t;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

async function parkedRefund(order: string): Promise<string> {
  const { run } = await stack.client().startRun('refund', { order, amount: 42.5 }, { wait: true, labels: { team: 'payments' } });
  expect(run.status).toBe(3); // SUSPENDED on the approval
  return run.id;
}

beforeAll(async () => {
  if (!haveChromium()) throw new Error('no Chromium at /usr/bin/chromium: run `bash scripts/setup-browser.sh` (npm test runs it through scripts/setup-test-tools.sh)');
  [stack, browser] = await Promise.all([ConsoleStack.start(), launch()]);
}, TIMEOUT);

afterAll(async () => {
  for (const t of tabs) await t.context.close().catch(() => undefined);
  await browser?.close();
  await stack?.stop();
}, TIMEOUT);

describe('the web console in Chromium', () => {
  it('shows nothing without a credential, refuses a bad one, and signs in with an API key', { timeout: TIMEOUT }, async () => {
    const t = await tab();
    await t.page.goto(`${stack.base}runs/some-run`);
    await t.page.getByRole('heading', { name: 'Sign in to Waymark' }).waitFor();
    expect(await t.page.locator('table').count()).toBe(0);
    await expectAccessible(t.page, 'sign-in');
    await screenshot(t.page, 'sign-in');
    await t.page.getByLabel('API key or stream token').fill('wmk_notakey_0000');
    await t.page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => t.page.getByRole('alert').textContent()).toMatch(/Sign-in failed/);
    // The refusal is the server's 401, which Chromium logs as a failed resource: expected here.
    t.errors.splice(0);
    await signIn(t, stack.base, stack.adminKey);
    expect(t.errors).toEqual([]);
  });

  it('opens a parked run, approves it in the inbox, and watches it finish on the timeline', { timeout: TIMEOUT }, async () => {
    const runId = await parkedRefund('A-1001');
    const t = await tab();
    await signIn(t, stack.base, stack.adminKey);
    // The runs list, filtered by status in the URL.
    await t.page.goto(`${stack.base}?status=suspended`);
    const row = t.page.getByRole('row').filter({ has: t.page.locator(`a[title="${runId}"]`) });
    await row.waitFor();
    await expect.poll(() => row.textContent()).toContain('suspended');
    await expect.poll(() => row.textContent()).toContain('team=payments');
    await expectAccessible(t.page, 'runs list');
    await screenshot(t.page, 'runs');

    await row.getByRole('link').click();
    await t.page.waitForURL(`**/console/runs/${runId}`);
    await t.page.getByText('Waiting on').waitFor();
    await t.page.getByRole('button', { name: /approval/ }).first().waitFor();
    await expectAccessible(t.page, 'run page, parked');
    await screenshot(t.page, 'run-parked');

    await t.page.getByRole('link', { name: 'decide in the inbox' }).click();
    await t.page.waitForURL('**/console/approvals');
    const card = t.page.getByRole('article').filter({ hasText: 'Refund $42.5 for order A-1001?' });
    await card.waitFor();
    await expect.poll(() => card.textContent()).toMatch(/denied[\s\S]*by default/);
    await expectAccessible(t.page, 'approvals inbox');
    await screenshot(t.page, 'approvals', true);
    await card.getByLabel('Comment').fill('receipt checked');
    await card.getByLabel('Your name').fill('alice');
    await card.getByRole('button', { name: 'Approve' }).click();
    await t.page.getByText('You approved it. The run resumes.').waitFor();

    await t.page.goto(`${stack.base}runs/${runId}`);
    await t.page.locator('.badge', { hasText: 'succeeded' }).waitFor({ timeout: 90_000 });
    await t.page.getByText('approved by alice').first().waitFor();
    await t.page.getByRole('button', { name: /tool charge_back/ }).waitFor();
    await expectAccessible(t.page, 'run page, finished');
    await screenshot(t.page, 'run-timeline');
    expect(t.errors).toEqual([]);
  });

  it('two reviewers decide the same approval in two browsers: one wins, the other is shown who and when', { timeout: TIMEOUT }, async () => {
    await parkedRefund('A-2002');
    const [a, b] = [await tab(), await tab()];
    await Promise.all([signIn(a, stack.base, stack.adminKey), signIn(b, stack.base, stack.adminKey)]);
    for (const t of [a, b]) await t.page.goto(`${stack.base}approvals`);
    const cardOf = (t: Tab) => t.page.getByRole('article').filter({ hasText: 'order A-2002' });
    await Promise.all([cardOf(a).waitFor(), cardOf(b).waitFor()]);
    await cardOf(a).getByLabel('Your name').fill('ann');
    await cardOf(b).getByLabel('Your name').fill('bob');
    await cardOf(b).getByLabel('Comment').fill('looks wrong');
    await cardOf(a).getByRole('button', { name: 'Approve' }).click();
    await a.page.getByText('You approved it. The run resumes.').waitFor();
    // Bob's page still shows the form (its next refresh has not come): he denies, and loses.
    await cardOf(b).getByRole('button', { name: 'Deny' }).click();
    await b.page.getByText(/Already decided by ann: approved at \d{4}-\d\d-\d\d/).waitFor();
    await screenshot(b.page, 'approvals-decided-elsewhere');
    const decided = await stack.client().listApprovals({ states: ['APPROVED'] }).next();
    expect(decided.value?.decidedBy).toBeDefined();
    expect(a.errors).toEqual([]);
    expect(b.errors).toEqual([]);
  });

  it('a namespace key sees its namespace only, and the console still loads', { timeout: TIMEOUT }, async () => {
    const other = await stack.client({ namespace: 'tenant-b' }).startRun('refund', { order: 'B-1', amount: 9 }, { wait: true });
    const mineKey = await stack.namespaceKey('tenant-a');
    const mine = await stack.client({ token: mineKey }).startRun('refund', { order: 'A-77', amount: 7 }, { wait: true });
    const t = await tab();
    await signIn(t, stack.base, mineKey);
    await t.page.locator(`a[title="${mine.run.id}"]`).waitFor();
    expect(await t.page.locator(`a[title="${other.run.id}"]`).count()).toBe(0);
    expect(await t.page.locator('table.runs tbody tr').count()).toBe(1);
    await t.page.goto(`${stack.base}approvals`);
    await t.page.getByRole('article').filter({ hasText: 'order A-77' }).waitFor();
    expect(await t.page.getByText('order B-1').count()).toBe(0);
    await t.page.goto(`${stack.base}runs/${other.run.id}`);
    await expect.poll(() => t.page.getByRole('alert').first().textContent()).toMatch(/not found/i);
    expect(await t.page.getByText('B-1').count()).toBe(0);
    expect(await t.page.locator('.tl-row').count()).toBe(0);
    await screenshot(t.page, 'namespace-not-found');
    // Only the refusal of the other namespace's run (its 404s) was logged.
    expect(t.errors.filter((e) => !/status of 404/.test(e))).toEqual([]);
  });

  it('draws a run\'s timeline with parallel branches, a retry, a wait and a child, and every tab of its page', { timeout: TIMEOUT }, async () => {
    const { run } = await stack.client().startRun('fanout', { order: 'F-1' }, { wait: true });
    const client = stack.client();
    await expect.poll(async () => (await client.getRun(run.id)).run.status, { timeout: 60_000 }).toBe(4);
    const t = await tab();
    await signIn(t, stack.base, stack.adminKey);
    await t.page.goto(`${stack.base}runs/${run.id}`);
    await t.page.getByRole('button', { name: /step check-fraud/ }).waitFor();
    expect(await t.page.locator('.bar.attempt.st-error').count()).toBeGreaterThanOrEqual(1);
    expect(await t.page.locator('.bar.wait').count()).toBeGreaterThanOrEqual(2);
    expect(await t.page.getByRole('link', { name: /child/ }).count()).toBeGreaterThanOrEqual(1);
    await t.page.getByRole('button', { name: /step check-fraud/ }).click();
    await t.page.getByRole('complementary', { name: 'Selected entries' }).waitFor();
    await expectAccessible(t.page, 'timeline with details');
    await screenshot(t.page, 'run-fanout-timeline');
    for (const [tabName, name] of [['Compact', 'run-compact'], ['Entries', 'run-entries'], ['Run tree', 'run-tree'], ['Resume preview', 'run-preview'], ['Live events', 'run-events']] as const) {
      await t.page.getByRole('tab', { name: tabName }).click();
      await t.page.waitForURL(/tab=/);
      if (tabName === 'Run tree') await t.page.getByRole('list', { name: 'Run tree' }).getByText('leaf').waitFor();
      if (tabName === 'Resume preview') await t.page.getByRole('button', { name: 'Preview again' }).waitFor();
      if (tabName === 'Compact') await t.page.getByRole('link', { name: 'child run' }).waitFor();
      await expectAccessible(t.page, tabName);
      await screenshot(t.page, name);
    }
    expect(t.errors).toEqual([]);
  });

  it('shows an agent run as a conversation with tokens, cost and latency, and its tool calls with policy', { timeout: TIMEOUT }, async () => {
    const client = stack.client();
    const { run } = await client.startRun('research-agent', { question: 'what is durable execution?' }, { wait: true });
    const [approval] = await collect(client.listApprovals({ runId: run.id }));
    await client.approve(approval!.id, { by: 'carol', comment: 'fine' });
    await expect.poll(async () => (await client.getRun(run.id)).run.status, { timeout: 60_000 }).toBe(4);
    const t = await tab();
    await signIn(t, stack.base, stack.adminKey);
    await t.page.goto(`${stack.base}runs/${run.id}?tab=conversation`);
    await t.page.getByRole('list', { name: 'Conversation' }).waitFor();
    await expect.poll(() => t.page.getByRole('article', { name: /Model call/ }).count()).toBe(3);
    await expect.poll(() => t.page.getByRole('article', { name: /Model call/ }).first().textContent()).toMatch(/\d+ → \d+ tokens[\s\S]*\$[\d.]+[\s\S]*\d+ (ms|s)/);
    await t.page.getByText('approved by carol').first().waitFor();
    await expectAccessible(t.page, 'conversation');
    await screenshot(t.page, 'run-conversation');
    await t.page.getByRole('tab', { name: 'Tools' }).click();
    await t.page.getByRole('cell', { name: /ask: approved by carol/ }).waitFor();
    await expectAccessible(t.page, 'tools');
    await screenshot(t.page, 'run-tools');
    expect(t.errors).toEqual([]);
  });

  it('exports a journal as a file and opens it offline in the same views, without signing in', { timeout: TIMEOUT }, async () => {
    const { run } = await stack.client().startRun('fanout', { order: 'F-2' }, { wait: true });
    const client = stack.client();
    await expect.poll(async () => (await client.getRun(run.id)).run.status, { timeout: 60_000 }).toBe(4);
    const t = await tab();
    await signIn(t, stack.base, stack.adminKey);
    await t.page.goto(`${stack.base}runs/${run.id}`);
    await t.page.getByRole('button', { name: /step fetch-order/ }).waitFor();
    const [download] = await Promise.all([t.page.waitForEvent('download'), t.page.getByRole('button', { name: 'Export journal' }).click()]);
    const file = await download.path();
    const exported = JSON.parse(readFileSync(file, 'utf8')) as { format: string; entries: unknown[] };
    expect(exported.format).toBe('waymark.journal.v1');
    expect(exported.entries.length).toBe((await collect(client.journal(run.id))).length);
    const offline = await tab();
    await offline.page.goto(`${stack.base}offline`);
    await offline.page.getByLabel('Journal file').setInputFiles(file);
    await offline.page.getByText(`Opened from`).waitFor();
    await offline.page.getByRole('button', { name: /step fetch-order/ }).waitFor();
    expect(await offline.page.locator('.bar.wait').count()).toBeGreaterThanOrEqual(2);
    await expectAccessible(offline.page, 'offline viewer');
    await screenshot(offline.page, 'offline');
    expect(offline.errors).toEqual([]);
  });

  it('draws a registered flow and the nodes and edges a run of it took', { timeout: TIMEOUT }, async () => {
    const client = stack.client();
    const definition = parse(readFileSync('test/flows/refund-flow.yaml', 'utf8')) as JsonValue;
    await client.registerFlow(definition);
    const { run } = await client.startRun('refund-flow', { order: 'R-9', amount: 12 }, { wait: true });
    const [approval] = await collect(client.listApprovals({ runId: run.id }));
    await client.approve(approval!.id, { by: 'dana' });
    await expect.poll(async () => (await client.getRun(run.id)).run.status, { timeout: 60_000 }).toBe(4);
    const t = await tab();
    await signIn(t, stack.base, stack.adminKey);
    await t.page.goto(`${stack.base}flows`);
    await t.page.getByRole('link', { name: 'refund-flow' }).click();
    await t.page.getByRole('img', { name: /Graph of flow refund-flow: 5 nodes, 4 edges/ }).waitFor();
    await t.page.getByLabel('Show a run').selectOption(run.id);
    await expect.poll(() => t.page.locator('g.node.taken').count()).toBe(4);
    expect(await t.page.locator('g.edge.taken').count()).toBe(3);
    expect(await t.page.locator('g.node.taken', { hasText: 'declined' }).count()).toBe(0);
    await expectAccessible(t.page, 'flow');
    await screenshot(t.page, 'flow');
    expect(t.errors).toEqual([]);
  });

  it('works at a phone width', { timeout: TIMEOUT }, async () => {
    const runId = await parkedRefund('P-1');
    const t = await tab(PHONE);
    await signIn(t, stack.base, stack.adminKey);
    await t.page.locator(`a[title="${runId}"]`).waitFor();
    await expectAccessible(t.page, 'runs, phone');
    await screenshot(t.page, 'phone-runs');
    await t.page.goto(`${stack.base}runs/${runId}`);
    await t.page.getByText('Waiting on').waitFor();
    await expectAccessible(t.page, 'run, phone');
    await screenshot(t.page, 'phone-run');
    await t.page.goto(`${stack.base}approvals`);
    await t.page.getByRole('article').filter({ hasText: 'order P-1' }).waitFor();
    // Nothing wider than the screen: no sideways scrolling of the page.
    expect(await t.page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
    await expectAccessible(t.page, 'approvals, phone');
    await screenshot(t.page, 'phone-approvals');
    expect(t.errors).toEqual([]);
  });

  it('is usable by keyboard alone: sign in, move through the header, the runs and a run\'s tabs', { timeout: TIMEOUT }, async () => {
    const runId = await parkedRefund('K-1');
    const t = await tab();
    const { page } = t;
    await page.goto(stack.base);
    await page.getByLabel('API key or stream token').waitFor();
    // Page code as a string: this file is compiled for Node, without the DOM's types.
    const focused = () => page.evaluate(`(() => {
      const el = document.activeElement;
      return el ? el.tagName.toLowerCase() + ':' + (el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40) : '';
    })()`) as Promise<string>;
    // Skip link, brand, "Open file", then the credential field.
    for (let i = 0; i < 8 && !(await focused()).startsWith('input'); i++) await page.keyboard.press('Tab');
    expect(await focused()).toMatch(/^input/);
    await page.keyboard.type(stack.adminKey);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    // Focus is on the page's main region after each navigation: the header is behind it.
    for (let i = 0; i < 10 && (await focused()) !== 'a:Approvals'; i++) await page.keyboard.press('Shift+Tab');
    expect(await focused()).toBe('a:Approvals');
    await page.keyboard.press('Enter');
    await page.waitForURL('**/console/approvals');
    await page.goto(`${stack.base}runs/${runId}`);
    await page.getByRole('tab', { name: 'Timeline' }).waitFor();
    for (let i = 0; i < 20 && (await focused()) !== 'button:Timeline'; i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe('button:Timeline');
    await page.keyboard.press('ArrowRight');
    await page.waitForURL(/tab=compact/);
    expect(await focused()).toBe('button:Compact');
    expect(t.errors).toEqual([]);
  });
});
