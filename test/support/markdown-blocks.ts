import { readFile } from 'node:fs/promises';

/**
 * The fenced code blocks of a Markdown document, so tests can run the examples of README.md,
 * docs/*.md and the clients' READMEs exactly as printed (Rust's doctests are the model).
 *
 * A block is marked for a test in either of two ways, both invisible on a rendered page:
 * - words after the language in its info string: ```` ```sh doctest=install ````
 * - an HTML comment on the line(s) just before the fence: `<!-- doctest: file=main.go -->`
 * Words are `flag` (true) or `key=value` (`key="a value"` for spaces); both sources merge into
 * `meta`, the comment's words winning. What a word means is up to the test that reads it.
 *
 * Only CommonMark fences are read (``` or ~~~, three or more, indented up to three spaces, closed
 * by the same character at least as long); a fence inside a list item is found with its
 * indentation removed from every line. Indented code blocks are never examples here.
 */

export interface CodeBlock {
  /** The info string's first word (`ts`, `sh`, `go`, …), '' when there is none. */
  lang: string;
  /** The whole info string as written. */
  info: string;
  /** Words from the info string after the language and from a `<!-- doctest: … -->` comment. */
  meta: Record<string, string | true>;
  /** The `<!-- doctest: … -->` comment's text as written (`skip (needs kubectl)`), if it has one. */
  comment?: string;
  /** The block's text, its fence indentation removed, ending with a newline unless empty. */
  code: string;
  /** 1-based line number of the opening fence, for messages that point at the README. */
  line: number;
}

const OPEN = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const COMMENT = /^ {0,3}<!--\s*doctest:?\s*(.*?)\s*-->\s*$/;
const WORD = /([^\s=]+)(?:=(?:"([^"]*)"|(\S*)))?/g;

/** Parses `flag key=value key="two words"` into a record. */
export function parseMeta(words: string): Record<string, string | true> {
  const meta: Record<string, string | true> = {};
  for (const m of words.matchAll(WORD)) meta[m[1]!] = m[2] ?? m[3] ?? true;
  return meta;
}

/** Every fenced code block of `markdown`, in document order. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: CodeBlock[] = [];
  let comment: { text: string; meta: Record<string, string | true> } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const commented = COMMENT.exec(line);
    if (commented) {
      comment = { text: commented[1]!, meta: parseMeta(commented[1]!) };
      continue;
    }
    // A fence inside a list item: the item's indentation (any spaces) comes off every line.
    const indent = /^ */.exec(line)![0].length;
    const open = OPEN.exec(line.slice(Math.max(0, indent - 3)));
    if (!open || (open[2]![0] === '`' && open[3]!.includes('`'))) {
      if (line.trim() !== '') comment = undefined;
      continue;
    }
    const fence = open[2]!;
    const info = open[3]!.trim();
    const [lang = '', ...rest] = info.split(/\s+/).filter(Boolean);
    const body: string[] = [];
    const close = new RegExp(`^ {0,3}${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`);
    let j = i + 1;
    for (; j < lines.length; j++) {
      const text = lines[j]!;
      const unindented = text.slice(Math.min(indent, /^ */.exec(text)![0].length));
      if (close.test(unindented)) break;
      body.push(unindented);
    }
    blocks.push({
      lang,
      info,
      meta: { ...parseMeta(rest.join(' ')), ...comment?.meta },
      comment: comment?.text,
      code: body.length ? `${body.join('\n')}\n` : '',
      line: i + 1,
    });
    comment = undefined;
    i = j;
  }
  return blocks;
}

/** The fenced code blocks of a Markdown file. */
export async function readCodeBlocks(file: string): Promise<CodeBlock[]> {
  return codeBlocks(await readFile(file, 'utf8'));
}
