import { createWaymarkClient, type WaymarkClient } from '@waymark-dev/client';
import { APPROVALS_COMMANDS } from './approvals-commands.js';
import { commandHelp, commandTitle, parseCommand, type CommandSpec } from './command-spec.js';
import { closestName } from './closest-name.js';
import { connectionOf } from './connection.js';
import { errorMessage, exitCodeOf, EXIT, Interrupted, UsageError } from './exit-codes.js';
import { Output } from './output.js';
import { RUNS_COMMANDS } from './runs-commands.js';
import { PURGE_COMMANDS } from './runs-purge-command.js';
import { EXPORT_COMMANDS } from './runs-export-command.js';
import { FORK_COMMANDS } from './runs-fork-commands.js';
import { SIGNALS_COMMANDS } from './signals-commands.js';
import { WORKFLOWS_COMMANDS } from './workflows-commands.js';
import { FLOWS_COMMANDS } from './flows-commands.js';
import { KEYS_COMMANDS } from './keys-commands.js';
import { TOOLS_COMMANDS } from './tools-commands.js';
import { MCP_COMMANDS } from './mcp-commands.js';
import { SCHEDULES_COMMANDS } from './schedules-commands.js';

/*
 * `waymark runs|approvals|signals|workflows|tools|mcp|flows|schedules|keys …`: the operator commands. They reach the server only
 * through the TypeScript client package (@waymark-dev/client), as any remote user would; lint
 * keeps this folder off src/gen, src/server and the engine (eslint.config.js).
 */

export const COMMANDS: CommandSpec[] = [...RUNS_COMMANDS, ...EXPORT_COMMANDS, ...FORK_COMMANDS, ...PURGE_COMMANDS, ...APPROVALS_COMMANDS, ...SIGNALS_COMMANDS, ...WORKFLOWS_COMMANDS, ...TOOLS_COMMANDS, ...MCP_COMMANDS, ...FLOWS_COMMANDS, ...SCHEDULES_COMMANDS, ...KEYS_COMMANDS];
export const GROUPS = [...new Set(COMMANDS.map((c) => c.group))];

export interface Streams {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

/** The help of a group (`waymark runs --help`): its commands, one line each. */
export function groupHelp(group: string): string {
  const commands = COMMANDS.filter((c) => c.group === group);
  const width = Math.max(...commands.map((c) => `${c.name} ${c.args.join(' ')}`.length));
  return [
    `Usage: waymark ${group} <command> [options]`,
    '',
    'Commands:',
    ...commands.map((c) => `  ${`${c.name} ${c.args.join(' ')}`.padEnd(width)}  ${c.summary}`),
    '',
    `Run "waymark ${group} <command> --help" for a command's options and an example. docs/cli.md`,
  ].join('\n') + '\n';
}

export async function runOperatorCommand(argv: string[], env: NodeJS.ProcessEnv, streams: Streams): Promise<number> {
  const [group, name, ...rest] = argv as [string, string | undefined, ...string[]];
  const early = new Output('table', streams.stdout, streams.stderr, env);
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    streams.stdout.write(groupHelp(group));
    return name === undefined ? EXIT.invalidInput : EXIT.ok;
  }
  const spec = COMMANDS.find((c) => c.group === group && c.name === name);
  if (!spec) {
    const names = COMMANDS.filter((c) => c.group === group).map((c) => c.name);
    const near = closestName(name, names);
    early.error(`waymark ${group}`, `unknown command "${name}"; one of ${names.join(', ')}${near ? `; did you mean "${near}"?` : ''} (see waymark ${group} --help)`);
    return EXIT.invalidInput;
  }
  const title = commandTitle(spec);
  // A reader that went away (`| head -1`, `| jq -e … | head`): stop quietly, as cat and grep do.
  streams.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(EXIT.ok);
    streams.stderr.write(`${title}: cannot write to standard output (${err.message})\n`);
    process.exit(EXIT.error);
  });
  let client: WaymarkClient | undefined;
  let address = '';
  let tls = false;
  let credentialsHint = '';
  let out = early;
  const abort = new AbortController();
  const onSigint = (): void => abort.abort(new Interrupted());
  try {
    const { args, values } = parseCommand(spec, rest);
    if (values.help) {
      streams.stdout.write(commandHelp(spec));
      return EXIT.ok;
    }
    const connection = connectionOf(values, env);
    address = connection.address;
    tls = connection.client.tls !== undefined;
    credentialsHint = connection.credentialsHint;
    out = new Output(connection.output, streams.stdout, streams.stderr, env);
    process.once('SIGINT', onSigint);
    return await spec.run({
      args, values, out, signal: abort.signal, timeoutMs: connection.timeoutMs,
      client: () => (client ??= createWaymarkClient(connection.client)),
    });
  } catch (err) {
    if (err instanceof Interrupted || abort.signal.aborted) {
      out.note(`${title}: interrupted; nothing more was sent`);
      return EXIT.interrupted;
    }
    const hint = err instanceof UsageError ? ` (see ${title} --help)` : '';
    const credentials = exitCodeOf(err) === EXIT.denied ? credentialsHint : '';
    out.error(title, `${errorMessage(err, address, tls)}${credentials}${hint}`);
    return exitCodeOf(err);
  } finally {
    process.off('SIGINT', onSigint);
    client?.close();
  }
}
