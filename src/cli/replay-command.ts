import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { createAgentRuntime } from '../agent/agent-runtime.js';
import { parseSealingKeys, PayloadSealer, Registry, replayJournal, type ReplayCheckReport } from '../engine/index.js';
import { loadUserModule } from '../index.js';
import { parseStrict, type OptionSpec } from './client/strict-options.js';
import { UsageError } from './client/usage-error.js';

/*
 * `waymark replay --workflows FILE JOURNAL…`: the CI check of docs/replay.md. Each journal export
 * (`waymark runs export`) is replayed against the module's workflows with no live call and no
 * database (replayJournal, src/engine/runtime/journal-replay.ts); one line per file says whether it
 * replays, and the exit status says whether any diverged. A folder stands for the .json files in it.
 */

/** docs/replay.md "Exit codes". */
export const REPLAY_EXIT = { ok: 0, diverged: 1, unusable: 2 } as const;

const OPTIONS: Record<string, OptionSpec> = {
  workflows: { type: 'string', value: 'FILE', help: 'the module whose workflows the journals are checked against (also WAYMARK_WORKFLOWS)' },
  json: { type: 'boolean', help: 'one JSON object per file on standard output, for CI (docs/replay.md "JSON output")' },
  strict: { type: 'boolean', help: 'also fail on a call with no journal entry (it would run live) and on orphaned effects' },
};

const HELP = `Usage: waymark replay --workflows FILE [--strict] [--json] JOURNAL…

Replays each journal export (waymark runs export; a folder: the .json files in it) against the
workflows of FILE with no live call and no database, and fails if any diverges from the code: a
call that matches another kind of effect, a call made in another order than the journal recorded,
a run that succeeded and now fails. A new call (it would run live) and an orphaned effect are
accepted as a resume accepts them, unless --strict.

Options:
  --workflows FILE  the module whose workflows the journals are checked against (also WAYMARK_WORKFLOWS)
  --strict          also fail on a call with no journal entry and on orphaned effects
  --json            one JSON object per file on standard output, for CI
  -h, --help        this help

Example:
  waymark replay --workflows ./workflows.ts journals/

Exit codes: 0 every journal replays, 1 at least one diverged, 2 a usage error or a file or module
that could not be read (the check was not made). docs/replay.md
`;

interface Streams {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

type FileResult = { file: string; status: 'ok' | 'diverged'; report: ReplayCheckReport } | { file: string; status: 'unreadable'; error: string };

/** The journal files named: files as given, folders as their .json files in name order. */
async function journalFiles(args: string[]): Promise<string[]> {
  const files: string[] = [];
  for (const arg of args) {
    const info = await stat(arg).catch(() => null);
    if (info?.isDirectory()) {
      const names = (await readdir(arg)).filter((n) => n.endsWith('.json')).sort();
      files.push(...names.map((n) => path.join(arg, n)));
    } else files.push(arg);
  }
  return files;
}

async function checkFile(registry: Registry, file: string, strict: boolean): Promise<FileResult> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return { file, status: 'unreadable', error: `cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  try {
    const report = await replayJournal(registry, text, { strict });
    return { file, status: report.ok ? 'ok' : 'diverged', report };
  } catch (err) {
    // JournalExportError (not an export) and JournalCorruptError (entries that do not fit together).
    return { file, status: 'unreadable', error: (err as Error).message };
  }
}

/** The line (and the indented notes) a person reads for one file. */
function textOf(r: FileResult): string {
  if (r.status === 'unreadable') return `unreadable  ${r.file}: ${r.error}\n`;
  const { report } = r;
  const what = `${report.workflow.name} version ${report.workflow.version}, run ${report.runId}`;
  const lines: string[] = [];
  if (r.status === 'ok') {
    lines.push(`replays     ${r.file} (${what}): ${report.hits} call(s) answered from the journal, recorded ${report.recordedStatus}, now ${report.outcome}`);
  } else {
    const first = report.divergences[0]!;
    const entry = first.seq === null ? `${first.kind} "${first.name}"` : `seq ${first.seq} ${first.kind} "${first.name}"`;
    lines.push(`DIVERGED    ${r.file} (${what}): ${entry}: ${first.verdict}: ${first.message}`);
    for (const d of report.divergences.slice(1)) {
      lines.push(`  also: ${d.seq === null ? '' : `seq ${d.seq} `}${d.kind} "${d.name}": ${d.verdict}: ${d.message}`);
    }
  }
  for (const note of report.notes) lines.push(`  note: ${note}`);
  return lines.join('\n') + '\n';
}

export async function runReplayCommand(argv: string[], env: NodeJS.ProcessEnv, streams: Streams): Promise<number> {
  let files: string[];
  let modulePath: string;
  let values: Record<string, unknown>;
  try {
    const parsed = parseStrict(OPTIONS, argv);
    values = parsed.values;
    if (values.help) {
      streams.stdout.write(HELP);
      return REPLAY_EXIT.ok;
    }
    const workflows = typeof values.workflows === 'string' ? values.workflows : env.WAYMARK_WORKFLOWS;
    if (!workflows) throw new UsageError('--workflows FILE is required: the module whose workflows the journals are checked against');
    if (parsed.positionals.length === 0) throw new UsageError('name at least one journal export (a file from waymark runs export, or a folder of them)');
    modulePath = workflows;
    files = await journalFiles(parsed.positionals);
    if (files.length === 0) throw new UsageError(`no .json file in ${parsed.positionals.join(', ')}`);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    streams.stderr.write(`waymark replay: ${err.message} (see waymark replay --help)\n`);
    return REPLAY_EXIT.unusable;
  }
  let registry: Registry;
  try {
    // Agents replay their model calls from the journal; the runtime is there so ctx.agent exists.
    // A module with a secret tool registers only with a sealer, as on the server (its payloads arrive redacted).
    const sealer = env.WAYMARK_SECRETS_KEYS ? new PayloadSealer(parseSealingKeys(env.WAYMARK_SECRETS_KEYS)) : null;
    registry = (await loadUserModule(modulePath, new Registry({ agent: createAgentRuntime({ env }), sealer }))).registry;
  } catch (err) {
    streams.stderr.write(`waymark replay: ${(err as Error).message}\n`);
    return REPLAY_EXIT.unusable;
  }
  const counts = { ok: 0, diverged: 0, unreadable: 0 };
  for (const file of files) {
    const result = await checkFile(registry, file, values.strict === true);
    counts[result.status]++;
    if (values.json) {
      const body = result.status === 'unreadable' ? { error: result.error } : result.report;
      streams.stdout.write(`${JSON.stringify({ file: result.file, status: result.status, ...body })}\n`);
    } else streams.stdout.write(textOf(result));
  }
  if (!values.json) {
    streams.stdout.write(`${files.length} journal(s): ${counts.ok} replay, ${counts.diverged} diverged, ${counts.unreadable} unreadable\n`);
  }
  if (counts.unreadable > 0) return REPLAY_EXIT.unusable;
  return counts.diverged > 0 ? REPLAY_EXIT.diverged : REPLAY_EXIT.ok;
}
