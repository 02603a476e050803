import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DocSession } from '../support/doc-session.js';
import { codeBlocks } from '../support/markdown-blocks.js';

/*
 * README.md, docs/cli.md and docs/flows.md followed as printed against a live `waymark dev`
 * (issue 30; the rules are CONTRIBUTING.md's "Examples are tests", the machinery
 * test/support/doc-session.ts). Each page gets its own server, database and scratch clone, so a
 * page's `approvals list` shows that page's runs only. The Quick start's two lines are not run
 * here: this test runs from the checkout their `npm install` built, its server is what `npm start`
 * starts (asserted below), and `npm test` is the suite running it.
 */

const root = path.resolve('.');
const read = (file: string): Promise<string> => readFile(path.join(root, file), 'utf8');

let session: DocSession | undefined;
afterEach(async () => {
  await session?.stop();
  session = undefined;
});

describe('the docs, followed as printed against waymark dev', () => {
  it('npm start is the server these tests start: node bin/waymark.js dev', async () => {
    const pkg = JSON.parse(await read('package.json')) as { scripts: Record<string, string>; bin: Record<string, string> };
    expect(pkg.scripts.start).toBe('node bin/waymark.js dev');
    expect(pkg.bin.waymark).toMatch(/^(\.\/)?bin\/waymark\.js$/);
  });

  it('README.md: the health check and reflection with buf curl, then a refund started, approved and read with npx waymark', { timeout: 600_000 }, async () => {
    session = await DocSession.start('readme');
    const { ran, compared } = await session.follow('README.md', await read('README.md'));
    expect(ran.map((b) => b.code)).toEqual([
      expect.stringContaining('grpc.health.v1.Health/Check'),
      expect.stringContaining('--list-methods'),
      expect.stringContaining('$ npx waymark runs start refund'),
    ]);
    // The health answer, then the transcript's three commands.
    expect(compared).toBe(4);
  });

  it('docs/cli.md: the walkthrough, the scripts and the strict command lines', { timeout: 600_000 }, async () => {
    session = await DocSession.start('cli');
    const { ran, compared, missing } = await session.follow('docs/cli.md', await read('docs/cli.md'));
    // The scripts' block needs jq, which `npm test` does not (it then says so and skips it).
    expect([...ran, ...missing].map((b) => b.code)).toEqual(expect.arrayContaining([expect.stringContaining('| jq')]));
    expect(ran.map((b) => b.code)).toEqual([
      expect.stringContaining('$ waymark workflows list'),
      expect.stringContaining('$ waymark runs export'),
      ...(missing.length ? [] : [expect.stringContaining('| jq')]),
      expect.stringContaining('$ waymark dev --workflow'),
    ]);
    expect(compared).toBe(15);

    // The negative control: the walkthrough's first command, its output edited by one character,
    // fails against the same server.
    const first = codeBlocks(await read('docs/cli.md')).find((b) => b.meta.run && b.lang === 'console')!;
    const step = first.code.split('\n$ ')[0]!;
    const wrong = step.replace(/refund {10}1 {8}([0-9a-f]{11})[0-9a-f]/, (_, digest: string) => `refund          1        ${digest}x`);
    expect(wrong).not.toBe(step);
    await expect(session.follow('edited', `<!-- doctest: run -->\n\`\`\`console\n${wrong}\n\`\`\`\n`)).rejects.toThrow(/printed something other than the page/);
  });

  it('docs/flows.md: the refund flow registered from its YAML (digest as printed), run, approved and its journal read', { timeout: 600_000 }, async () => {
    session = await DocSession.start('flows');
    const { ran, compared } = await session.follow('docs/flows.md', await read('docs/flows.md'));
    expect(ran.map((b) => b.code)).toEqual([expect.stringContaining('$ waymark flows register refund-flow.yaml')]);
    expect(compared).toBe(5);
  });
});
