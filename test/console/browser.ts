import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

/*
 * Headless Chromium for the console's tests: Debian's `chromium` (scripts/setup-browser.sh installs
 * it; WAYMARK_CHROMIUM points elsewhere), driven by playwright-core, never a downloaded browser
 * build. Each page records its console errors and page errors (a CSP refusal is one), and axe-core
 * checks the page it shows.
 */

export const CHROMIUM = process.env.WAYMARK_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = path.resolve('docs/console');
export const LAPTOP = { width: 1366, height: 860 };
export const PHONE = { width: 390, height: 844 };

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export function haveChromium(): boolean {
  return existsSync(CHROMIUM);
}

export function launch(): Promise<Browser> {
  // --no-sandbox: the tests run as root in CI containers, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

export interface Tab {
  page: Page;
  context: BrowserContext;
  /** Console errors, page errors and failed requests the page logged. */
  errors: string[];
}

export async function openTab(browser: Browser, options: { viewport?: { width: number; height: number } } = {}): Promise<Tab> {
  const context = await browser.newContext({ viewport: options.viewport ?? LAPTOP, acceptDownloads: true });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  return { page, context, errors };
}

export async function signIn(tab: Tab, base: string, credential: string): Promise<void> {
  await tab.page.goto(base);
  await tab.page.getByLabel('API key or stream token').fill(credential);
  await tab.page.getByRole('button', { name: 'Sign in' }).click();
  await tab.page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** axe-core over the page as shown: no serious or critical violation (WCAG 2 A/AA and best practice). */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  await page.evaluate(AXE);
  // Page code as a string: this file is compiled for Node, without the DOM's types.
  const violations = await page.evaluate(`axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
    .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 3).map((n) => JSON.stringify(n.target)) })))`) as Array<{ id: string; impact: string; help: string; targets: string[] }>;
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious, `${what}: ${JSON.stringify(serious, null, 1)}`).toEqual([]);
}

/** Saves the page into docs/console/<name>.png (linked from docs/console.md). */
export async function screenshot(page: Page, name: string, fullPage = false): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage });
}
