import { parseArgs } from 'node:util';
import type { WaymarkClient } from '@waymark-dev/client';
import { CONNECTION_OPTIONS } from './connection.js';
import { UsageError } from './exit-codes.js';
import type { Output } from './output.js';

/*
 * One operator command (`waymark runs start`, ...) as data: its arguments, options, help text and
 * example, parsed with node:util parseArgs in strict mode. The help of every command is generated
 * from this, so it cannot drift from what the parser accepts.
 */

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** The value's placeholder in help (`JSON`, `ID`); strings only. */
  value?: string;
  multiple?: boolean;
  short?: string;
  help: string;
}

export type Values = Record<string, string | boolean | string[] | boolean[] | undefined>;

/** What a command's `run` receives. */
export interface Invocation {
  /** The positional arguments, as many as `args` names. */
  args: string[];
  values: Values;
  /** Created on first use, so `--help` and usage errors never connect. */
  client(): WaymarkClient;
  out: Output;
  /** Aborted by Ctrl-C. */
  signal: AbortSignal;
  /** Deadline of each unary call, retries included (--timeout). */
  timeoutMs: number;
}

/** A string option's value, or undefined when it was not given. */
export const str = (inv: Invocation, name: string): string | undefined => (typeof inv.values[name] === 'string' ? (inv.values[name] as string) : undefined);
/** A repeatable option's values (empty when it was not given). */
export const list = (inv: Invocation, name: string): string[] => (Array.isArray(inv.values[name]) ? (inv.values[name] as string[]) : []);
/** The per-call options of a unary client call: --timeout and Ctrl-C. */
export const call = (inv: Invocation) => ({ timeoutMs: inv.timeoutMs, signal: inv.signal });

export interface CommandSpec {
  group: string;
  name: string;
  /** Positional arguments, e.g. ['<run>', '<name>']. */
  args: string[];
  summary: string;
  /** More lines of help after the summary. */
  details?: string;
  options: Record<string, OptionSpec>;
  examples: string[];
  run(inv: Invocation): Promise<number>;
}

export function commandTitle(spec: CommandSpec): string {
  return `waymark ${spec.group} ${spec.name}`;
}

/** Parses `argv` (after the group and command words) for `spec`; throws UsageError naming what to fix. */
export function parseCommand(spec: CommandSpec, argv: string[]): { args: string[]; values: Values } {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { ...toParseOptions(CONNECTION_OPTIONS), ...toParseOptions(spec.options), help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    throw new UsageError(parseError(err));
  }
  const values = parsed.values as Values;
  if (values.help) return { args: [], values };
  const wanted = spec.args.length;
  const optional = spec.args.filter((a) => a.startsWith('[')).length;
  if (parsed.positionals.length < wanted - optional) {
    throw new UsageError(`missing ${spec.args.slice(parsed.positionals.length).filter((a) => !a.startsWith('[')).join(' ')}`);
  }
  if (parsed.positionals.length > wanted) throw new UsageError(`unexpected argument "${parsed.positionals[wanted]}"`);
  return { args: parsed.positionals, values };
}

function toParseOptions(options: Record<string, OptionSpec>) {
  return Object.fromEntries(
    Object.entries(options).map(([name, o]) => [name, { type: o.type, ...(o.multiple ? { multiple: true } : {}), ...(o.short ? { short: o.short } : {}) }]),
  ) as Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>;
}

/** parseArgs' messages, shortened to the part that says what to fix. */
function parseError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const message = e.message ?? String(err);
  const option = /'(-{1,2}[^' ]+)/.exec(message)?.[1];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (message.includes('does not take an argument')) return `${option} takes no value`;
      if (message.includes('ambiguous')) return `${option} needs a value; for one starting with a dash write ${option}=VALUE`;
      return `${option} needs a value`;
    default:
      return message.split('\n')[0]!;
  }
}

/** The help of one command: usage, summary, its options, the shared connection options, examples. */
export function commandHelp(spec: CommandSpec): string {
  const lines = [`Usage: ${commandTitle(spec)}${spec.args.map((a) => ` ${a}`).join('')} [options]`, '', spec.summary];
  if (spec.details) lines.push('', spec.details);
  const own = Object.entries(spec.options);
  if (own.length > 0) lines.push('', 'Options:', ...optionLines(spec.options));
  lines.push('', 'Connection and output (every command):', ...optionLines({ ...CONNECTION_OPTIONS, help: { type: 'boolean', short: 'h', help: 'this help' } }));
  lines.push('', spec.examples.length > 1 ? 'Examples:' : 'Example:', ...spec.examples.map((e) => `  ${e}`));
  lines.push('', 'Exit codes: 0 ok, 1 error, 2 invalid input, 3 not found, 4 wrong state, 5 unavailable, 6 credentials refused, 7 run failed (--wait), 130 interrupted. docs/cli.md');
  return lines.join('\n') + '\n';
}

function optionLines(options: Record<string, OptionSpec>): string[] {
  const rows = Object.entries(options).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}${o.multiple ? '…' : ''}`;
    return [flag, o.help] as const;
  });
  const width = Math.max(...rows.map(([f]) => f.length));
  return rows.map(([f, h]) => `  ${f.padEnd(width)}  ${h}`);
}
