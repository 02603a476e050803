import { parseArgs } from 'node:util';
import { closestName } from './closest-name.js';
import { UsageError } from './usage-error.js';

/*
 * The options of a command as data and their strict parse, shared by every command of the CLI:
 * the operator commands (command-spec.ts) and dev, server and the others (src/cli/server-commands.ts).
 * Nothing here loads the client package, so a server command starts without it.
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

/**
 * `argv` parsed against `options` and `--help` (-h) in strict mode, as every command of the CLI is
 * (the operator commands here, dev, server and the others in src/cli/server-commands.ts): an
 * unknown option is a UsageError naming the closest valid one.
 */
export function parseStrict(options: Record<string, OptionSpec>, argv: string[]): { positionals: string[]; values: Values } {
  const all = { ...options, help: { type: 'boolean', short: 'h', help: 'this help' } satisfies OptionSpec };
  try {
    const parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: toParseOptions(all) });
    return { positionals: parsed.positionals, values: parsed.values as Values };
  } catch (err) {
    throw new UsageError(parseError(err, Object.keys(all).map((name) => `--${name}`)));
  }
}

function toParseOptions(options: Record<string, OptionSpec>) {
  return Object.fromEntries(
    Object.entries(options).map(([name, o]) => [name, { type: o.type, ...(o.multiple ? { multiple: true } : {}), ...(o.short ? { short: o.short } : {}) }]),
  ) as Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>;
}

/** parseArgs' messages, shortened to the part that says what to fix; an unknown option gets the closest of `flags`. */
function parseError(err: unknown, flags: string[]): string {
  const e = err as { code?: string; message?: string };
  const message = e.message ?? String(err);
  const option = /'(-{1,2}[^' ]+)/.exec(message)?.[1];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const near = option === undefined ? undefined : closestName(option, flags);
      return `unknown option ${option}${near ? `; did you mean ${near}?` : ''}`;
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (message.includes('does not take an argument')) return `${option} takes no value`;
      if (message.includes('ambiguous')) return `${option} needs a value; for one starting with a dash write ${option}=VALUE`;
      return `${option} needs a value`;
    default:
      return message.split('\n')[0]!;
  }
}

