// Lint: TypeScript rules plus the architecture of STYLE.md, enforced as import rules.
// Imports point down only: cli -> server, sweeper, store/open-store -> engine, agent -> store -> journal.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { noImportCycle } from './scripts/eslint/no-import-cycle.js';

const src = (dir) => `./src/${dir}`;
const zone = (target, from, message) => ({ target: src(target), from: from.map(src), message });

/*
 * Inside engine/ (docs/architecture.md "The engine's rooms"), bottom to top: each room imports only
 * rooms below it, so no arrow runs back up and no two rooms import each other. errors.ts is the
 * engine-wide error file every room may import; the root files (the use cases, the replica's engine,
 * the user-module loader, the front door) sit on top.
 */
const ENGINE_ROOMS = [
  ['errors.ts', 'the engine-wide error classes: they import nothing of the engine'],
  ['access', 'API keys, stream tokens and payload sealing: they import nothing of the engine'],
  ['replay', 'the pure replay core: it imports only errors.ts of the engine'],
  ['author', 'the workflow API (and the AgentRuntime contract): it imports the replay core, nothing that runs'],
  ['registry.ts', 'the definitions: the author API and access, nothing that runs'],
  ['flow', 'declarative flows over ctx: they reach effects through ctx (author/workflow.ts), never the runtime'],
  ['runtime', 'executing one run (and the RunDriver): the read side, the scheduler and the use cases call it, not the reverse'],
  ['read', 'the read-only views: the scheduler and the use cases call them, not the reverse'],
  ['scheduling', '"execute this run here now": only the use cases (the root) sit above it'],
  ['run-engine.ts', 'the use cases on runs: the replica engine and the front door call them'],
  ['schedules', 'schedules: the ScheduleService use cases and the ticker\'s pass; they start runs through the use cases on runs, nothing above'],
  ['replica-engine.ts', 'one replica\'s engine behind its RPCs: the front door exports it'],
  ['user-module.ts', 'the user-module loader'],
  ['index.ts', 'the front door'],
];

function engineRooms() {
  return ENGINE_ROOMS.slice(0, -1).map(([room, what], i) => ({
    target: src(`engine/${room}`),
    from: ENGINE_ROOMS.slice(i + 1).map(([above]) => src(`engine/${above}`)),
    message: `engine/${room} is ${what}; imports point down the engine's rooms (eslint.config.js ENGINE_ROOMS).`,
  }));
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'src/gen/**', 'clients/**', 'console/dist/**', '.waymark/**', 'dist/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { 'import-x': importX, waymark: { rules: { 'no-import-cycle': noImportCycle } } },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // import-x/no-cycle skips type-only imports and has no option to count them: this rule does (scripts/eslint/no-import-cycle.js).
      'waymark/no-import-cycle': ['error', { root: 'src' }],
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            zone('journal', ['store', 'engine', 'agent', 'server', 'sweeper', 'cli', 'gen'], 'journal/ is the domain: it imports nothing of ours.'),
            zone('store', ['engine', 'agent', 'server', 'sweeper', 'cli', 'gen', 'webhooks'], 'store/ sits below the engine.'),
            zone('webhooks', ['store/postgres', 'store/memory', 'server', 'sweeper', 'cli', 'gen', 'agent'], 'webhooks/ (the dispatcher and the WebhookService use cases) depends on the store interface only; server/ calls it, cli/ starts it.'),
            zone('engine', ['store/postgres', 'store/memory', 'server', 'sweeper', 'cli', 'gen'], 'engine/ depends on the JournalStore interface only.'),
            zone('mcp', ['store/postgres', 'store/memory', 'server', 'sweeper', 'cli', 'gen', 'agent', 'webhooks'], 'mcp/ (the MCP connector) depends on the engine\'s front door and the store interface only.'),
            zone('engine', ['mcp'], 'engine/ must not import mcp/: ctx.tool reaches MCP servers through the McpConnector given to RunEngine (engine/runtime/mcp-connector.ts).'),
            zone('engine', ['agent'], 'engine/ must not import agent/: ctx.agent reaches it through the AgentRuntime on the Registry (engine/author/agent-contract.ts).'),
            zone('agent', ['store/postgres', 'store/memory', 'server', 'sweeper', 'cli', 'gen'], 'agent/ depends on the engine and the store interface only.'),
            zone('agent', ['engine/replay/replay.ts'], 'agent/ reads journals through the engine\'s read side (engine/read/effects.ts), not the replay core.'),
            zone('sweeper', ['store/postgres', 'store/memory', 'server', 'cli', 'gen'], 'sweeper/ depends on the engine and the store interface only.'),
            zone('server', ['cli', 'sweeper', 'store/postgres', 'store/memory'], 'server/ is the transport: the composition root (cli/) picks stores.'),
            zone('server', ['agent'], 'server/ converts and delegates: spend, provenance and agents reach it through the engine (engine/replica-engine.ts, engine/read/).'),
            {
              target: src('server'), from: src('store'), except: ['./run-id.ts', './write-checks.ts'],
              message: 'server/ reads runs, journals, streams and page cursors through the engine (engine/replica-engine.ts, engine/read/), not the store; only the run id format and the storable-JSON check are shared, to refuse bad input before the engine.',
            },
            // Inside server/ (docs/architecture.md "The server's rooms"), imports point down:
            // routes/ -> transport/ -> auth/ -> errors/ -> convert/.
            zone('server/convert', ['server/errors', 'server/auth', 'server/transport', 'server/routes'], 'server/convert/ (proto <-> domain conversion and request checks) is the bottom room of server/: it imports no other room of it.'),
            zone('server/errors', ['server/auth', 'server/transport', 'server/routes'], 'server/errors/ maps errors to gRPC statuses: it may read the request checks (convert/), nothing above.'),
            zone('server/auth', ['server/transport', 'server/routes'], 'server/auth/ (keys, stream tokens, access rules, CORS) sits below the transport and the routes.'),
            zone('server/transport', ['server/routes'], 'server/transport/ serves any router: the composition root registers the routes (routes/register-routes.ts), the transport never imports them.'),
            zone('index.ts', ['gen', 'server', 'cli', 'store/postgres'], 'the package root exports the workflow API only.'),
            zone('cli/client', ['gen', 'server', 'engine', 'store', 'sweeper', 'agent', 'journal', 'index.ts'], 'the operator commands (cli/client/) reach the server only through the TypeScript client package: import @waymark-dev/client, as a remote user does.'),
            ...engineRooms(),
            zone('engine', ['index.ts'], 'the engine does not import the package root (it pulls in MemoryStore and agent/); engine/user-module.ts loads it for require(\'waymark\'), on one line that says so.'),
            // The front door (docs/architecture.md "The front door"): the layers above the engine import it through src/engine/index.ts only.
            {
              target: ['server', 'sweeper', 'webhooks', 'agent', 'mcp', 'cli'].map(src),
              from: src('engine'),
              except: ['./index.ts'],
              message: 'import the engine through its front door, src/engine/index.ts (add the name there if it is missing), not a file behind it.',
            },
            // Every store kind, present or future (a folder under store/), is reached only through store/open-store.ts
            // (the package root may still export MemoryStore, for users testing their workflows).
            {
              target: ['engine', 'agent', 'mcp', 'sweeper', 'server', 'cli', 'webhooks'].map(src),
              from: [src('store/*/**')],
              message: 'store implementations (the folders under store/) are opened only by store/open-store.ts (openStore); everything else depends on the JournalStore interface.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/journal/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(node:)?(fs|net|http|http2|child_process|dgram|dns|tls)(/.*)?$|^pg$', message: 'journal/ performs no I/O.' }] },
      ],
    },
  },
  {
    // The database driver stays inside the Postgres store; the embedded-PostgreSQL starter also
    // needs it (it probes and creates its database before any store exists).
    files: ['src/**/*.ts'],
    ignores: ['src/store/postgres/**', 'src/cli/embedded-postgres.ts', 'src/journal/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^pg(-[a-z-]+)?(/.*)?$', message: 'pg is imported only in src/store/postgres/ (and the embedded-PostgreSQL starter): open stores with openStore (src/store/open-store.ts).' }] },
      ],
    },
  },
  {
    // The operator commands use the client package by its name (not its files, not a transport of their own).
    files: ['src/cli/client/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^pg(-[a-z-]+)?(/.*)?$', message: 'pg is imported only in src/store/postgres/ (and the embedded-PostgreSQL starter).' },
            { regex: '(^|/)clients/', message: 'import the client package as @waymark-dev/client, not its files: the CLI uses what users use.' },
            { regex: '^@connectrpc/', message: 'the operator commands call the server through @waymark-dev/client (its retries, reconnects and typed errors), not a Connect transport of their own.' },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.js'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
);
