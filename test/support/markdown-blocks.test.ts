import { describe, expect, it } from 'vitest';
import { codeBlocks, parseMeta } from './markdown-blocks.js';

describe('codeBlocks', () => {
  it('reads fences with their language, info-string words and line', () => {
    const md = [
      '# Title', // 1
      '', // 2
      '```sh doctest=install cwd="my app"', // 3
      'npm install', // 4
      '```', // 5
      'text', // 6
      '~~~~go', // 7
      'fmt.Println("```")', // 8
      '```', // 9: shorter and of another character: not a close
      '~~~~', // 10
      '```', // 11
      '```', // 12
    ].join('\n');
    expect(codeBlocks(md)).toEqual([
      { lang: 'sh', info: 'sh doctest=install cwd="my app"', meta: { doctest: 'install', cwd: 'my app' }, code: 'npm install\n', line: 3 },
      { lang: 'go', info: 'go', meta: {}, code: 'fmt.Println("```")\n```\n', line: 7 },
      { lang: '', info: '', meta: {}, code: '', line: 11 },
    ]);
  });

  it('takes words from a doctest comment just before the fence, and only from there', () => {
    const md = [
      '<!-- doctest: file=main.ts run -->',
      '```ts',
      'const a = 1;',
      '```',
      '<!-- doctest: skip -->',
      'A paragraph in between detaches the comment.',
      '',
      '```ts',
      'const b = 2;',
      '```',
    ].join('\n');
    const blocks = codeBlocks(md);
    expect(blocks.map((b) => b.meta)).toEqual([{ file: 'main.ts', run: true }, {}]);
  });

  it('removes a list item\'s indentation from a fence inside it', () => {
    const md = ['1. Install:', '', '     ```sh', '     go work init .', '       indented', '     ```', ''].join('\n');
    expect(codeBlocks(md)).toEqual([{ lang: 'sh', info: 'sh', meta: {}, code: 'go work init .\n  indented\n', line: 3 }]);
  });

  it('parses flags and quoted values', () => {
    expect(parseMeta('a b=c d="e f"')).toEqual({ a: true, b: 'c', d: 'e f' });
  });
});
