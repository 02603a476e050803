import { toJson, type DescMessage, type MessageShape } from '@bufbuild/protobuf';

/** How a command prints: a table for people, JSON for scripts (--output). */
export type OutputMode = 'table' | 'json';

/*
 * Where a command's text goes. `json` prints each result as one line of the proto3 JSON mapping
 * (the field names of proto/waymark/v1, as docs/api.md shows them, every field present), so
 * scripts read lists and streams line by line. `table` is for people: colours only when the
 * stream is a terminal and NO_COLOR is unset, and on a terminal one progress line that rewrites
 * itself in place (`--wait`, `--follow`); a pipe gets plain lines instead.
 */

export type Style = 'bold' | 'dim' | 'red' | 'green' | 'yellow' | 'blue' | 'cyan' | 'magenta';

const CODES: Record<Style, [number, number]> = {
  bold: [1, 22], dim: [2, 22], red: [31, 39], green: [32, 39], yellow: [33, 39], blue: [34, 39], cyan: [36, 39], magenta: [35, 39],
};

interface Stream {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export function colourAllowed(stream: Stream, env: NodeJS.ProcessEnv): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}

export class Output {
  private progressShown = false;

  constructor(
    readonly mode: OutputMode,
    private readonly stdout: Stream,
    private readonly stderr: Stream,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  get json(): boolean {
    return this.mode === 'json';
  }

  /** True when stdout is a terminal: progress rewrites one line instead of printing lines. */
  get terminal(): boolean {
    return this.stdout.isTTY === true;
  }

  paint(text: string, ...styles: Style[]): string {
    if (!colourAllowed(this.stdout, this.env) || styles.length === 0 || text === '') return text;
    return styles.reduce((s, style) => `\x1b[${CODES[style][0]}m${s}\x1b[${CODES[style][1]}m`, text);
  }

  /** Writes text to stdout (clearing the progress line first). */
  print(text: string): void {
    this.clearProgress();
    this.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** One message as a JSON line. */
  jsonLine<D extends DescMessage>(schema: D, message: MessageShape<D>): void {
    this.print(JSON.stringify(toJson(schema, message, { alwaysEmitImplicit: true })));
  }

  /** A plain JSON value as a line. */
  jsonValue(value: unknown): void {
    this.print(JSON.stringify(value));
  }

  /** A note for people on stderr (never mixed into json stdout). */
  note(text: string): void {
    this.clearProgress();
    this.stderr.write(`${text}\n`);
  }

  error(prefix: string, message: string): void {
    this.clearProgress();
    const head = colourAllowed(this.stderr, this.env) ? `\x1b[31m${prefix}:\x1b[39m` : `${prefix}:`;
    this.stderr.write(`${head} ${message}\n`);
  }

  /** Rewrites the progress line in place; terminals only (callers print lines otherwise). */
  progress(text: string): void {
    if (!this.terminal) return;
    const width = Math.max(20, (this.stdout.columns || 80) - 1);
    this.stdout.write(`\r\x1b[2K${fit(text, width)}`);
    this.progressShown = true;
  }

  clearProgress(): void {
    if (!this.progressShown) return;
    this.stdout.write('\r\x1b[2K');
    this.progressShown = false;
  }
}

/** Cuts text to `width` visible characters, keeping colour codes intact. */
function fit(text: string, width: number): string {
  let visible = 0;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\x1b') {
      const end = text.indexOf('m', i);
      if (end > i) {
        out += text.slice(i, end + 1);
        i = end;
        continue;
      }
    }
    if (visible >= width) continue;
    out += text[i];
    visible++;
  }
  return out;
}
