/**
 * Terminal transcripts of the docs (```` ```console ```` blocks: `$ command` lines, each followed
 * by what it printed), read so a test can run each command and compare what it prints with the
 * page (issue 30; the doctest rules are in CONTRIBUTING.md "Examples are tests").
 *
 * What may differ between the page and a run, and nothing else:
 * - ids: a UUID on the page stands for the id at the same place in the run's output, bound on its
 *   first appearance in an output; later commands get the run's id where the page has its own
 *   (`approvals complete <run id>:1` as printed works on the run the test started);
 * - the example's refund ids (`rf_` and hex, whole or cut by a table with `…`);
 * - timestamps (RFC 3339), clock times (`12:24:00.292`) and durations (`6.6s`, `11ms`, `6m57s`, with the
 *   spaces that pad one in a table column).
 * Digests, statuses, counts, messages and exit codes are compared as printed.
 */

export interface TranscriptStep {
  /** The command as printed, without the `$ ` prompt (continuation lines ending in `\` joined). */
  command: string;
  /** What the page says it printed, stdout and stderr together as a terminal shows them. */
  expected: string;
}

/** The steps of a transcript; text before the first `$ ` line is refused (it would be checked against nothing). */
export function parseTranscript(code: string): TranscriptStep[] {
  const steps: TranscriptStep[] = [];
  const lines = code.replace(/\n$/, '').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('$ ')) {
      let command = line.slice(2);
      while (command.endsWith('\\') && i + 1 < lines.length) command = `${command.slice(0, -1)}\n${lines[++i]}`;
      steps.push({ command, expected: '' });
    } else if (steps.length === 0) {
      throw new Error(`a transcript starts with a "$ " command line, not: ${line}`);
    } else {
      const step = steps[steps.length - 1]!;
      step.expected += `${line}\n`;
    }
  }
  return steps;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** Times, durations and refund ids, which differ on every run. */
function withoutVolatile(text: string): string {
  return text
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>')
    .replace(/\b\d\d:\d\d:\d\d\.\d{3}\b/g, '<clock>')
    // A duration's width varies (`6.6s`, `16.0s`), and so do the spaces padding it in a table.
    .replace(/\b(?:\d+h)?(?:\d+m(?!s))?\d+(?:\.\d+)?(?:ms|s)\b( +)?/g, (_, padding?: string) => (padding ? '<duration> ' : '<duration>'))
    .replace(/rf_[0-9a-f]+…?/g, 'rf_<id>');
}

/**
 * The ids of one session (one document): the page's and the run's, numbered in order of first
 * appearance in outputs, so `<id 1>` on the page is `<id 1>` in the run.
 */
export class TranscriptIds {
  private readonly page = new Map<string, number>();
  private readonly run = new Map<string, number>();

  /** The command with each page id already seen replaced by the run's id of the same number. */
  command(command: string): string {
    const byNumber = new Map([...this.run].map(([id, n]) => [n, id]));
    return command.replace(UUID, (id) => {
      const n = this.page.get(id);
      return n === undefined ? id : (byNumber.get(n) ?? id);
    });
  }

  /** The page's output as compared: ids numbered, volatile parts replaced, trailing spaces gone. */
  expected(text: string): string {
    return this.normalize(text, this.page);
  }

  /** The run's output as compared. */
  actual(text: string): string {
    return this.normalize(text, this.run);
  }

  private normalize(text: string, ids: Map<string, number>): string {
    const numbered = text.replace(UUID, (id) => {
      if (!ids.has(id)) ids.set(id, ids.size + 1);
      return `<id ${ids.get(id)}>`;
    });
    return withoutVolatile(numbered)
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n')
      .trimEnd();
  }
}
