import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Config } from './config.js';

const HELP = `waymark: durable execution for AI-agent runs

Usage:
  waymark dev      [--workflows FILE]   server + sweeper on an embedded PostgreSQL (./.waymark)
  waymark server   [--workflows FILE]   gRPC server and executor (DATABASE_URL, or embedded if unset)
  waymark sweeper                       recovery loop for one store: expired leases, deadlines,
                                        sleeps, parents and children (one of several acts)
  waymark migrate                       apply database migrations and exit
  waymark bootstrap-key [--name NAME]   create an admin API key in the store (DATABASE_URL) and
                                        print it once: the first key of a deployment
  waymark replay --workflows FILE JOURNAL…
                                        replay journal exports (waymark runs export) against the
                                        module's code with no live call and no database; exit 1 on
                                        any divergence (docs/replay.md)
  waymark help | --help | --version     each command also takes --help: waymark dev --help

Operator commands (a client of a running server, local or remote; docs/cli.md):
  waymark runs start|get|list|cancel|journal|events|resume|provenance|export
  waymark approvals list|get|complete
  waymark signals send
  waymark workflows list
  waymark tools list                            tools runs can call, remote ones with their live workers
  waymark mcp add|list|remove                   MCP servers whose tools runs call as ctx.tool("server.tool") (docs/mcp.md)
  waymark flows register|get|list              declarative flows from JSON or YAML (docs/flows.md)
  waymark schedules create|get|list|update|pause|unpause|trigger|backfill|delete
                                                runs on a calendar, one per tick (docs/schedules.md)
  waymark keys create|list|revoke               API keys (an admin key; docs/security.md)
  Each takes --addr, --namespace, --token, TLS flags and --output table|json; --help on any of
  them prints its options and an example, e.g. waymark runs start --help.

Options:
  --workflows FILE   a module in any folder whose exported workflows and tools are registered:
                     .ts, .mts, .cts, .tsx, .js, .mjs, .cjs or .jsx, with no install, build or
                     package.json needed (also WAYMARK_WORKFLOWS; docs/workflows.md)
  --addr HOST:PORT   where to serve gRPC, gRPC-Web and Connect (also WAYMARK_ADDR; 127.0.0.1:50051)

Settings (environment): DATABASE_URL, WAYMARK_ADDR, WAYMARK_METRICS_ADDR, WAYMARK_LEASE_TTL_MS,
WAYMARK_SWEEP_INTERVAL_MS, WAYMARK_SESSION_CHECK_MS, WAYMARK_SHUTDOWN_GRACE_MS, WAYMARK_WORKFLOWS, WAYMARK_DATA_DIR,
WAYMARK_LOG_LEVEL, WAYMARK_LOG_FORMAT, WAYMARK_AUTH, WAYMARK_AUTH_CACHE_MS, WAYMARK_STREAM_TOKEN_SECRET, WAYMARK_CORS_ORIGINS,
WAYMARK_REFLECTION_PUBLIC, WAYMARK_MAX_PAYLOAD_BYTES, WAYMARK_PAYLOAD_INLINE_BYTES, WAYMARK_MAX_REQUEST_BYTES, WAYMARK_CLIENT_MAX_BUFFERED_BYTES,
WAYMARK_TLS_CERT_FILE, WAYMARK_TLS_KEY_FILE, WAYMARK_TLS_CLIENT_CA_FILE, WAYMARK_HEALTH_ADDR,
WAYMARK_WEBHOOK_ALLOW_PRIVATE, WAYMARK_WEBHOOK_MAX_ATTEMPTS, WAYMARK_SECRETS_KEYS, WAYMARK_RESUME_CACHE_ENTRIES, WAYMARK_RESUME_CACHE_BYTES,
WAYMARK_TIMER_HORIZON_MS, WAYMARK_RETENTION_DAYS, WAYMARK_RETENTION_NAMESPACES, WAYMARK_MAX_JOURNAL_BYTES.
See docs/configuration.md.
`;

/** Exit status for a bad setting (sysexits EX_CONFIG), so supervisors can tell it from a crash. */
const EXIT_CONFIG = 78;
/** A command line that is wrong (a typo, an unknown option, nothing at all): as the operator commands' invalid input. */
const EXIT_USAGE = 2;

/** The operator commands' groups (src/cli/client/), dispatched before any server setting is read. */
const CLIENT_GROUPS = new Set(['runs', 'approvals', 'signals', 'workflows', 'tools', 'mcp', 'flows', 'schedules', 'keys']);

const SERVER_COMMAND_NAMES = new Set(['dev', 'server', 'sweeper', 'migrate', 'bootstrap-key', 'help', 'version']);

/**
 * The argv of an operator command, or undefined for a server command. Options may come before the
 * group (`waymark --addr db:50051 runs list`, as with kubectl and gh): they are moved after the
 * command, where its parser reads them.
 */
function operatorArgv(argv: string[]): string[] | undefined {
  const at = argv.findIndex((a) => CLIENT_GROUPS.has(a));
  if (at < 0) return undefined;
  const leading = argv.slice(0, at);
  if (leading.length > 0 && (!leading[0]!.startsWith('-') || leading.some((a) => SERVER_COMMAND_NAMES.has(a)))) return undefined;
  const name = argv[at + 1];
  const named = name !== undefined && !name.startsWith('-');
  return [argv[at]!, ...(named ? [name] : []), ...leading, ...argv.slice(at + (named ? 2 : 1))];
}

/** One line on standard error and the usage exit status: the whole help is one `--help` away. */
function usageError(message: string, title = 'waymark'): number {
  process.stderr.write(`${title}: ${message}\n`);
  return EXIT_USAGE;
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    // Nothing asked: the help, but as a usage error (a script that forgot its command must not pass).
    process.stderr.write(HELP);
    return EXIT_USAGE;
  }
  const operator = operatorArgv(argv);
  if (operator !== undefined) {
    const { runOperatorCommand } = await import('./client/operator-cli.js');
    return runOperatorCommand(operator, process.env, { stdout: process.stdout, stderr: process.stderr });
  }
  const first = argv[0]!;
  if (first === 'help' || first === '--help' || first === '-h') {
    process.stdout.write(HELP);
    return 0;
  }
  if (first === 'version' || first === '--version') {
    // The package's own file by name: this module runs from src/cli or, compiled, from dist/src/cli.
    const pkg = JSON.parse(readFileSync(fileURLToPath(import.meta.resolve('waymark/package.json')), 'utf8')) as { version: string };
    process.stdout.write(`waymark ${pkg.version}\n`);
    return 0;
  }
  if (first === 'replay') {
    // Not a server command: it opens no database and reads no server setting.
    const { runReplayCommand } = await import('./replay-command.js');
    return runReplayCommand(argv.slice(1), process.env, { stdout: process.stdout, stderr: process.stderr });
  }
  const { SERVER_COMMANDS, serverCommandHelp } = await import('./server-commands.js');
  const { closestName } = await import('./client/closest-name.js');
  const spec = SERVER_COMMANDS.find((c) => c.name === first);
  if (!spec) {
    const known = [...SERVER_COMMANDS.map((c) => c.name), ...CLIENT_GROUPS, 'replay', 'help', 'version'];
    const flags = ['--help', '--version'];
    const near = closestName(first, first.startsWith('-') ? flags : known);
    const what = first.startsWith('-') ? `unknown option ${first}` : `unknown command "${first}"`;
    return usageError(`${what}${near ? `; did you mean ${first.startsWith('-') ? near : `"${near}"`}?` : ''} (waymark --help lists every command)`);
  }
  const { parseStrict } = await import('./client/strict-options.js');
  const { UsageError } = await import('./client/usage-error.js');
  let values: Record<string, unknown>;
  try {
    const parsed = parseStrict(spec.options, argv.slice(1));
    if (parsed.positionals.length > 0) throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`);
    values = parsed.values;
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return usageError(`${err.message} (see waymark ${spec.name} --help)`, `waymark ${spec.name}`);
  }
  if (values.help) {
    process.stdout.write(serverCommandHelp(spec));
    return 0;
  }
  const command = spec.name;
  // Loaded here, not at the top: the operator commands above start without the server's modules.
  const { ConfigError, loadConfig } = await import('./config.js');
  const { createLogger } = await import('./logger.js');
  const env = { ...process.env };
  if (typeof values.workflows === 'string') env.WAYMARK_WORKFLOWS = values.workflows;
  if (typeof values.addr === 'string') env.WAYMARK_ADDR = values.addr;
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`waymark: ${err.message}\n`);
      return EXIT_CONFIG;
    }
    throw err;
  }
  const logger = createLogger(config.logLevel, { command }, { format: config.logFormat });
  switch (command) {
    case 'bootstrap-key': {
      const { runBootstrapKey } = await import('./bootstrap-key-command.js');
      return runBootstrapKey(config, logger, { name: typeof values.name === 'string' ? values.name : 'bootstrap admin key', write: (l) => process.stdout.write(l) });
    }
    case 'migrate': {
      const { runMigrate } = await import('./migrate-command.js');
      return runMigrate(config, logger);
    }
    case 'sweeper': {
      const { runSweeper } = await import('./sweeper-command.js');
      return runSweeper(config, logger);
    }
    case 'dev':
    case 'server': {
      const { runServe } = await import('./serve-command.js');
      return runServe(config, logger, { dev: command === 'dev' });
    }
    default:
      throw new Error(`waymark ${command} has no implementation`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  async (err: unknown) => {
    process.stderr.write(`waymark: ${err instanceof Error ? err.message : String(err)}\n`);
    // Model settings are validated when the agent runtime is built: a bad one is a config error too.
    const { ModelConfigError } = await import('../agent/agent-errors.js');
    process.exitCode = err instanceof ModelConfigError ? EXIT_CONFIG : 1;
  },
);
