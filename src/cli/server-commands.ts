import type { OptionSpec } from './client/strict-options.js';

/*
 * The server-side commands (`waymark dev`, `server`, `sweeper`, `migrate`, `bootstrap-key`) as
 * data, as the operator commands are (client/command-spec.ts): the options each accepts, parsed
 * strictly (an unknown one is refused naming the closest), and the help `--help` prints, generated
 * from the same data. The settings themselves are environment variables (docs/configuration.md).
 */

export interface ServerCommand {
  name: string;
  /** One line: what the command does. */
  summary: string;
  /** More lines of help after the summary. */
  details: string;
  options: Record<string, OptionSpec>;
  examples: string[];
}

const WORKFLOWS: OptionSpec = {
  type: 'string', value: 'FILE',
  help: 'a module whose exported workflows and tools are registered: .ts, .mts, .cts, .tsx, .js, .mjs, .cjs or .jsx, in any folder (also WAYMARK_WORKFLOWS; docs/workflows.md)',
};
const ADDR: OptionSpec = { type: 'string', value: 'HOST:PORT', help: 'where to serve gRPC, gRPC-Web and Connect (also WAYMARK_ADDR; default 127.0.0.1:50051)' };

export const SERVER_COMMANDS: ServerCommand[] = [
  {
    name: 'dev',
    summary: 'The server and the sweeper in one process, on an embedded PostgreSQL in ./.waymark, with the built-in examples.',
    details: 'For a laptop: the first start creates the database and writes an admin key to .waymark/local-admin-key, which the\n' +
      'operator commands on this machine use by themselves. DATABASE_URL, when set, is used instead of the embedded database.',
    options: { workflows: WORKFLOWS, addr: ADDR },
    examples: ['waymark dev', 'waymark dev --workflows ./workflows.ts'],
  },
  {
    name: 'server',
    summary: 'The gRPC server and executor: serves the API and executes runs (DATABASE_URL, or embedded PostgreSQL when unset).',
    details: 'Run as many as you like on one database; run `waymark sweeper` beside them (one is active at a time).',
    options: { workflows: WORKFLOWS, addr: ADDR },
    examples: ['DATABASE_URL=postgres://… waymark server --workflows ./workflows.ts'],
  },
  {
    name: 'sweeper',
    summary: 'The recovery loop of one database: expired leases, deadlines, sleeps, parents and children.',
    details: 'Several may run; one holds the leader lease and acts, the others wait to take over (docs/recovery.md).',
    options: {},
    examples: ['DATABASE_URL=postgres://… waymark sweeper'],
  },
  {
    name: 'migrate',
    summary: 'Applies the database migrations this version ships, then exits (the server also applies them at start).',
    details: 'Safe to run from several processes at once: migrations are applied under a lock.',
    options: {},
    examples: ['DATABASE_URL=postgres://… waymark migrate'],
  },
  {
    name: 'bootstrap-key',
    summary: 'Creates an admin API key in the database and prints it once: the first key of a deployment.',
    details: 'Later keys are created with `waymark keys create` (docs/security.md).',
    options: { name: { type: 'string', value: 'NAME', help: 'the key\'s name, shown by waymark keys list (default "bootstrap admin key")' } },
    examples: ['DATABASE_URL=postgres://… waymark bootstrap-key --name ops'],
  },
];

/** The help of one server command: usage, summary, details, its options, examples. */
export function serverCommandHelp(command: ServerCommand): string {
  const rows = [...Object.entries(command.options), ['help', { type: 'boolean', short: 'h', help: 'this help' } as OptionSpec] as const]
    .map(([name, o]) => [`${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`, o.help] as const);
  const width = Math.max(...rows.map(([flag]) => flag.length));
  return [
    `Usage: waymark ${command.name}${Object.keys(command.options).length > 0 ? ' [options]' : ''}`,
    '',
    command.summary,
    '',
    command.details,
    '',
    'Options:',
    ...rows.map(([flag, help]) => `  ${flag.padEnd(width)}  ${help}`),
    '',
    command.examples.length > 1 ? 'Examples:' : 'Example:',
    ...command.examples.map((e) => `  ${e}`),
    '',
    'Settings are environment variables (DATABASE_URL, WAYMARK_ADDR, WAYMARK_METRICS_ADDR, …): docs/configuration.md',
  ].join('\n') + '\n';
}
