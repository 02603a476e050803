import type { WaymarkClient } from '@waymark-dev/client';
import { CONNECTION_OPTIONS } from './connection.js';
import { parseStrict, type OptionSpec, type Values } from './strict-options.js';
import { UsageError } from './usage-error.js';
import type { Output } from './output.js';

export type { OptionSpec, Values } from './strict-options.js';

/*
 * One operator command (`waymark runs start`, ...) as data: its arguments, options, help text and
 * example, parsed with node:util parseArgs in strict mode. The help of every command is generated
 * from this, so it cannot drift from what the parser accepts.
 */

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
  const parsed = parseStrict({ ...CONNECTION_OPTIONS, ...spec.options }, argv);
  const values = parsed.values;
  if (values.help) return { args: [], values };
  const wanted = spec.args.length;
  const optional = spec.args.filter((a) => a.startsWith('[')).length;
  if (parsed.positionals.length < wanted - optional) {
    throw new UsageError(`missing ${spec.args.slice(parsed.positionals.length).filter((a) => !a.startsWith('[')).join(' ')}`);
  }
  if (parsed.positionals.length > wanted) throw new UsageError(`unexpected argument "${parsed.positionals[wanted]}"`);
  return { args: parsed.positionals, values };
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
