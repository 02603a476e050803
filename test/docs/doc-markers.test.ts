import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeBlocks } from '../support/markdown-blocks.js';

/*
 * No example of the pages test/docs/doc-examples.test.ts and test/clients/readme-examples.test.ts
 * follow goes untested by accident: every fenced shell, console, TypeScript, Go or Python block
 * (and every block with no language) is marked to run,
 * to be saved as a file the next commands use, or skipped with its reason in the comment
 * (`<!-- doctest: skip (needs kubectl) -->`). A new block without a marker fails here.
 */

const PAGES = ['README.md', 'docs/cli.md', 'docs/flows.md', 'clients/ts/README.md', 'clients/python/README.md', 'clients/go/README.md'];
const EXAMPLE_LANGS = new Set(['', 'sh', 'bash', 'shell', 'console', 'ts', 'typescript', 'js', 'javascript', 'go', 'python']);

/** What is wrong with a page's markers, one line per block. */
export function unmarkedExamples(where: string, markdown: string): string[] {
  const problems: string[] = [];
  for (const block of codeBlocks(markdown)) {
    const at = `${where}:${block.line}`;
    if (block.meta.skip && !/^skip \(.+\)$/.test(block.comment ?? '')) problems.push(`${at}: a skip says why: <!-- doctest: skip (reason) -->`);
    if (block.meta.run && block.lang === 'console' && !block.code.startsWith('$ ')) problems.push(`${at}: a console block to run starts with a "$ " command`);
    if (!EXAMPLE_LANGS.has(block.lang) || block.meta.skip) continue;
    if (!block.meta.run && typeof block.meta.file !== 'string') problems.push(`${at}: a ${block.lang || 'plain'} block with no <!-- doctest: run -->, file=NAME or skip (reason) marker`);
  }
  return problems;
}

describe('the examples of README.md, docs/ and the client READMEs are all marked', () => {
  it.each(PAGES)('%s: every shell, console, TypeScript, Go and Python block runs, is a file, or is skipped with a reason', async (page) => {
    const markdown = await readFile(path.resolve(page), 'utf8');
    expect(unmarkedExamples(page, markdown)).toEqual([]);
    expect(codeBlocks(markdown).some((b) => b.meta.run)).toBe(true);
  });

  it('finds a block added without a marker, and a skip without a reason', () => {
    const page = ['<!-- doctest: run -->', '```sh', 'true', '```', '', '```sh', 'npx waymark runs list', '```', '', '<!-- doctest: skip -->', '```ts', 'x', '```'].join('\n');
    expect(unmarkedExamples('page.md', page)).toEqual([
      'page.md:6: a sh block with no <!-- doctest: run -->, file=NAME or skip (reason) marker',
      'page.md:11: a skip says why: <!-- doctest: skip (reason) -->',
    ]);
  });
});
