import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The folder rules of STYLE.md are lint rules; these cases prove each rule bites, so a config
// change that silently disables one fails here rather than in review.
const eslint = new ESLint({ cwd: process.cwd() });

async function ruleIds(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe('architecture rules', () => {
  it('journal/ imports nothing of ours', async () => {
    const ids = await ruleIds('src/journal/probe.ts', "import type { JournalStore } from '../store/store.js';\nexport type P = JournalStore;\n");
    expect(ids).toContain('import-x/no-restricted-paths');
  });

  it('webhooks/ depends on the store interface only, and the store does not import webhooks/', async () => {
    const impl = "import { PostgresStore } from '../store/postgres/postgres-store.js';\nexport const p = PostgresStore;\n";
    expect(await ruleIds('src/webhooks/probe.ts', impl)).toContain('import-x/no-restricted-paths');
    const upward = "import { registerWebhookService } from '../server/routes/webhook-service.js';\nexport const p = registerWebhookService;\n";
    expect(await ruleIds('src/webhooks/probe.ts', upward)).toContain('import-x/no-restricted-paths');
    const down = "import { newWebhookSecret } from '../webhooks/signing.js';\nexport const p = newWebhookSecret;\n";
    expect(await ruleIds('src/store/probe.ts', down)).toContain('import-x/no-restricted-paths');
    const iface = "import type { JournalStore } from '../store/store.js';\nexport type P = JournalStore;\n";
    expect(await ruleIds('src/webhooks/probe.ts', iface)).not.toContain('import-x/no-restricted-paths');
  });

  it('journal/ performs no I/O', async () => {
    const ids = await ruleIds('src/journal/probe.ts', "import { readFileSync } from 'node:fs';\nexport const p = readFileSync;\n");
    expect(ids).toContain('no-restricted-imports');
  });

  it('only server/ imports gen/', async () => {
    const code = "import { RunService } from '../gen/waymark/v1/run_service_pb.js';\nexport const p = RunService;\n";
    expect(await ruleIds('src/engine/probe.ts', code)).toContain('import-x/no-restricted-paths');
    expect(await ruleIds('src/server/probe.ts', code)).not.toContain('import-x/no-restricted-paths');
  });

  it('the engine depends on the store interface, not on an implementation', async () => {
    const ids = await ruleIds('src/engine/probe.ts', "import { MemoryStore } from '../store/memory/memory-store.js';\nexport const p = MemoryStore;\n");
    expect(ids).toContain('import-x/no-restricted-paths');
  });

  it('the engine does not import agent/ (ctx.agent reaches it through the AgentRuntime seam)', async () => {
    const code = "import { createAgentRuntime } from '../agent/agent-runtime.js';\nexport const p = createAgentRuntime;\n";
    expect(await ruleIds('src/engine/probe.ts', code)).toContain('import-x/no-restricted-paths');
    const upward = "import { effectContentKey } from '../engine/index.js';\nexport const p = effectContentKey;\n";
    expect(await ruleIds('src/agent/probe.ts', upward)).not.toContain('import-x/no-restricted-paths');
  });

  it('server/ does not import agent/ (spend and provenance come through the engine)', async () => {
    for (const code of [
      "import { runProvenance } from '../agent/provenance.js';\nexport const p = runProvenance;\n",
      "import { roundUsd } from '../agent/prices.js';\nexport const p = roundUsd;\n",
    ]) expect(await ruleIds('src/server/probe.ts', code)).toContain('import-x/no-restricted-paths');
    const through = "import { ReplicaEngine } from '../engine/index.js';\nexport const p = ReplicaEngine;\n";
    expect(await ruleIds('src/server/probe.ts', through)).not.toContain('import-x/no-restricted-paths');
  });

  it('server/ reads the store only through the engine: no cursors, no follower, not even the interface', async () => {
    for (const code of [
      "import { decodeRunCursor } from '../store/run-cursor.js';\nexport const p = decodeRunCursor;\n",
      "import { decodeSuspensionCursor } from '../store/suspension-cursor.js';\nexport const p = decodeSuspensionCursor;\n",
      "import { journalFollow } from '../store/journal-follow.js';\nexport const p = journalFollow;\n",
      "import type { JournalStore } from '../store/store.js';\nexport type P = JournalStore;\n",
    ]) expect(await ruleIds('src/server/probe.ts', code)).toContain('import-x/no-restricted-paths');
    // The run id format and the storable-JSON check refuse bad input before the engine is called.
    const shared = "import { isRunId } from '../store/run-id.js';\nexport const p = isRunId;\n";
    expect(await ruleIds('src/server/probe.ts', shared)).not.toContain('import-x/no-restricted-paths');
  });

  it('server/ rooms point down: routes/ -> transport/ -> auth/ -> errors/ -> convert/', async () => {
    const up = [
      ['src/server/convert/probe.ts', "import { toConnectError } from '../errors/error-mapping.js';\nexport const p = toConnectError;\n"],
      ['src/server/errors/probe.ts', "import { authInterceptor } from '../auth/auth.js';\nexport const p = authInterceptor;\n"],
      ['src/server/auth/probe.ts', "import { startGrpcServer } from '../transport/grpc-server.js';\nexport const p = startGrpcServer;\n"],
      ['src/server/transport/probe.ts', "import { registerRoutes } from '../routes/register-routes.js';\nexport const p = registerRoutes;\n"],
    ];
    for (const [file, code] of up) expect(await ruleIds(file!, code!), file).toContain('import-x/no-restricted-paths');
    const down = [
      ['src/server/routes/probe.ts', "import { streamSignal } from '../transport/shutdown-signal.js';\nexport const p = streamSignal;\n"],
      ['src/server/transport/probe.ts', "import { authInterceptor } from '../auth/auth.js';\nexport const p = authInterceptor;\n"],
      ['src/server/auth/probe.ts', "import { domainStatus } from '../errors/error-mapping.js';\nexport const p = domainStatus;\n"],
      ['src/server/errors/probe.ts', "import { InvalidRequestError } from '../convert/request-validation.js';\nexport const p = InvalidRequestError;\n"],
    ];
    for (const [file, code] of down) expect(await ruleIds(file!, code!), file).toEqual([]);
  });

  it('agent/ reads journals through the engine\'s read side, not the replay core', async () => {
    const core = "import { JournalIndex } from '../engine/replay/replay.js';\nexport const p = JournalIndex;\n";
    expect(await ruleIds('src/agent/probe.ts', core)).toContain('import-x/no-restricted-paths');
    const view = "import { effectContentKey } from '../engine/index.js';\nexport const p = effectContentKey;\n";
    expect(await ruleIds('src/agent/probe.ts', view)).not.toContain('import-x/no-restricted-paths');
  });

  it('inside engine/, the replay core imports nothing of the author API, the runtime, the use cases or the scheduler', async () => {
    const probe = 'src/engine/replay/probe.ts';
    for (const from of ['../author/workflow.js', '../runtime/execution.js', '../scheduling/executor.js', '../read/run-view.js', '../run-engine.js', '../replica-engine.js', '../registry.js']) {
      const code = `import * as m from '${from}';\nexport const p = m;\n`;
      expect(await ruleIds(probe, code), from).toContain('import-x/no-restricted-paths');
    }
    const clean = "import { JournalCorruptError } from '../errors.js';\nimport { contentKey } from './content-key.js';\nexport const p = [JournalCorruptError, contentKey];\n";
    expect(await ruleIds(probe, clean)).toEqual([]);
  });

  it('inside engine/, the runtime does not reach up to the use cases or the scheduler', async () => {
    for (const from of ['../run-engine.js', '../replica-engine.js', '../scheduling/executor.js']) {
      const code = `import * as m from '${from}';\nexport const p = m;\n`;
      expect(await ruleIds('src/engine/runtime/probe.ts', code), from).toContain('import-x/no-restricted-paths');
    }
    const down = "import { Registry } from '../registry.js';\nimport { replayDecide } from '../replay/replay.js';\nexport const p = [Registry, replayDecide];\n";
    expect(await ruleIds('src/engine/runtime/probe.ts', down)).toEqual([]);
  });

  it('inside engine/, flows reach effects through ctx only: not the runtime, the use cases or the scheduler', async () => {
    for (const from of ['../runtime/effect-runner.js', '../run-engine.js', '../replica-engine.js', '../scheduling/executor.js']) {
      const code = `import * as m from '${from}';\nexport const p = m;\n`;
      expect(await ruleIds('src/engine/flow/probe.ts', code), from).toContain('import-x/no-restricted-paths');
    }
    const down = "import { Registry } from '../registry.js';\nimport { canonicalJson } from '../replay/content-key.js';\nexport const p = [Registry, canonicalJson];\n";
    expect(await ruleIds('src/engine/flow/probe.ts', down)).toEqual([]);
  });

  it('inside engine/, the author API imports nothing of the runtime, not even types, and never the use cases', async () => {
    const probe = 'src/engine/author/probe.ts';
    const value = "import { Execution } from '../runtime/execution.js';\nexport const p = Execution;\n";
    expect(await ruleIds(probe, value)).toContain('import-x/no-restricted-paths');
    const types = "import type { AgentHost } from '../runtime/agent-host.js';\nexport type P = AgentHost;\n";
    expect(await ruleIds(probe, types)).toContain('import-x/no-restricted-paths');
    const up = "import { RunEngine } from '../run-engine.js';\nexport const p = RunEngine;\n";
    expect(await ruleIds(probe, up)).toContain('import-x/no-restricted-paths');
    // The AgentRuntime contract is part of the author API now; the replay core sits below it.
    const down = "import type { AgentOptions } from './agent-contract.js';\nimport { canonicalJson } from '../replay/content-key.js';\nexport const p = canonicalJson;\nexport type P = AgentOptions;\n";
    expect(await ruleIds(probe, down)).toEqual([]);
  });

  it('inside engine/, no arrow runs back up: runtime -> read, registry -> runtime, read -> scheduling, errors.ts -> anything', async () => {
    const cases: [string, string][] = [
      ['src/engine/runtime/probe.ts', "import type { RunEffects } from '../read/effects.js';\nexport type P = RunEffects;\n"],
      ['src/engine/runtime/probe.ts', "import type { RunProvenance } from '../read/run-provenance.js';\nexport type P = RunProvenance;\n"],
      ['src/engine/registry.ts', "import type { AgentHost } from './runtime/agent-host.js';\nexport type P = AgentHost;\n"],
      ['src/engine/read/probe.ts', "import { InlineExecutions } from '../scheduling/inline-executions.js';\nexport const p = InlineExecutions;\n"],
      ['src/engine/flow/probe.ts', "import type { RunView } from '../read/run-view.js';\nexport type P = RunView;\n"],
      ['src/engine/access/probe.ts', "import { contentKey } from '../replay/content-key.js';\nexport const p = contentKey;\n"],
    ];
    for (const [file, code] of cases) expect(await ruleIds(file, code), `${file}: ${code}`).toContain('import-x/no-restricted-paths');
    // errors.ts is the engine-wide error file: every room imports it, it imports nothing of the engine.
    const errorsUp = "import { WaymarkError } from '../journal/errors.js';\nimport { contentKey } from './replay/content-key.js';\nexport const p = [WaymarkError, contentKey];\n";
    expect(await ruleIds('src/engine/errors.ts', errorsUp)).toContain('import-x/no-restricted-paths');
    // The read side sits above the runtime: its views may use the runtime's suspension parsing.
    const readDown = "import { openWaits } from '../runtime/suspension.js';\nimport { FlowDriftError } from '../errors.js';\nexport const p = [openWaits, FlowDriftError];\n";
    expect(await ruleIds('src/engine/read/probe.ts', readDown)).toEqual([]);
  });

  it('a cycle made only of type imports is a cycle', async () => {
    // runtime/execution.ts imports runtime/call.ts; call.ts importing a type back closes a cycle
    // that import-x/no-cycle does not see (it skips type-only imports).
    const back = "import type { Execution } from './execution.js';\nexport type P = Execution;\n";
    const ids = await ruleIds('src/engine/runtime/call.ts', back);
    expect(ids).toContain('waymark/no-import-cycle');
    expect(ids).not.toContain('import-x/no-cycle');
    const noCycle = "import type { Lease } from '../../journal/run.js';\nexport type P = Lease;\n";
    expect(await ruleIds('src/engine/runtime/call.ts', noCycle)).not.toContain('waymark/no-import-cycle');
  });

  it('one front door: server/, sweeper/, webhooks/, agent/ and cli/ import the engine through src/engine/index.ts only', async () => {
    const behind: [string, string][] = [
      ['src/server/probe.ts', "import { RunEngine } from '../engine/run-engine.js';\nexport const p = RunEngine;\n"],
      ['src/server/probe.ts', "import type { ApprovalView } from '../engine/read/approvals.js';\nexport type P = ApprovalView;\n"],
      ['src/sweeper/probe.ts', "import { suspensionsResolveDue } from '../engine/runtime/resolutions.js';\nexport const p = suspensionsResolveDue;\n"],
      ['src/sweeper/probe.ts', "import { runTimeOut } from '../engine/runtime/run-ending.js';\nexport const p = runTimeOut;\n"],
      ['src/webhooks/probe.ts', "import { InvalidPageTokenError } from '../engine/read/page-token.js';\nexport const p = InvalidPageTokenError;\n"],
      ['src/agent/probe.ts', "import { runSpend } from '../engine/read/spend.js';\nexport const p = runSpend;\n"],
      ['src/cli/probe.ts', "import { Executor } from '../engine/scheduling/executor.js';\nexport const p = Executor;\n"],
    ];
    for (const [file, code] of behind) expect(await ruleIds(file, code), `${file}: ${code}`).toContain('import-x/no-restricted-paths');
    for (const file of ['src/server/probe.ts', 'src/sweeper/probe.ts', 'src/webhooks/probe.ts', 'src/agent/probe.ts', 'src/cli/probe.ts']) {
      const door = "import { RecoveryOperations, RunEngine } from '../engine/index.js';\nexport const p = [RecoveryOperations, RunEngine];\n";
      expect(await ruleIds(file, door), file).toEqual([]);
    }
  });

  it('the engine does not import the package root (MemoryStore, agent/): only user-module.ts does, on a line that says so', async () => {
    const code = "export const load = () => import('../../index.js');\n";
    expect(await ruleIds('src/engine/runtime/probe.ts', code)).toContain('import-x/no-restricted-paths');
    const staticRoot = "import { MemoryStore } from '../index.js';\nexport const p = MemoryStore;\n";
    expect(await ruleIds('src/engine/probe.ts', staticRoot)).toContain('import-x/no-restricted-paths');
  });

  it('pg is imported only in store/postgres/ and the embedded-PostgreSQL starter', async () => {
    const code = "import pg from 'pg';\nexport const p = pg;\n";
    for (const file of ['src/cli/probe.ts', 'src/server/probe.ts', 'src/engine/probe.ts', 'src/store/probe.ts', 'src/store/memory/probe.ts']) {
      expect(await ruleIds(file, code), file).toContain('no-restricted-imports');
    }
    const typeOnly = "import type pg from 'pg';\nexport type P = pg.Pool;\n";
    expect(await ruleIds('src/cli/probe.ts', typeOnly)).toContain('no-restricted-imports');
    expect(await ruleIds('src/cli/probe.ts', "import { Pool } from 'pg-pool';\nexport const p = Pool;\n")).toContain('no-restricted-imports');
    expect(await ruleIds('src/store/postgres/probe.ts', code)).not.toContain('no-restricted-imports');
    expect(await ruleIds('src/cli/embedded-postgres.ts', code)).not.toContain('no-restricted-imports');
  });

  it('the operator commands (cli/client/) reach the server only through the client package', async () => {
    const probe = 'src/cli/client/probe.ts';
    for (const from of ['../../gen/waymark/v1/run_service_pb.js', '../../server/routes/run-service.js', '../../engine/replica-engine.js', '../../store/store.js']) {
      const code = `import * as m from '${from}';\nexport const p = m;\n`;
      expect(await ruleIds(probe, code), from).toContain('import-x/no-restricted-paths');
    }
    for (const code of [
      "import { WaymarkClient } from '../../../clients/ts/src/client.js';\nexport const p = WaymarkClient;\n",
      "import { createGrpcTransport } from '@connectrpc/connect-node';\nexport const p = createGrpcTransport;\n",
      "import pg from 'pg';\nexport const p = pg;\n",
    ]) expect(await ruleIds(probe, code), code).toContain('no-restricted-imports');
    const through = "import { createWaymarkClient } from '@waymark-dev/client';\nimport { EXIT } from './exit-codes.js';\nexport const p = [createWaymarkClient, EXIT];\n";
    expect(await ruleIds(probe, through)).toEqual([]);
    // The rest of cli/ (the composition root) still reaches the server's modules.
    const root = "import { openStore } from '../store/open-store.js';\nexport const p = openStore;\n";
    expect(await ruleIds('src/cli/probe.ts', root)).toEqual([]);
  });

  it('cli/ opens stores through openStore, not an implementation', async () => {
    const postgres = "import { PostgresStore } from '../store/postgres/postgres-store.js';\nexport const p = PostgresStore;\n";
    expect(await ruleIds('src/cli/probe.ts', postgres)).toContain('import-x/no-restricted-paths');
    const memory = "import { MemoryStore } from '../store/memory/memory-store.js';\nexport const p = MemoryStore;\n";
    expect(await ruleIds('src/cli/probe.ts', memory)).toContain('import-x/no-restricted-paths');
    const root = "import { openStore } from '../store/open-store.js';\nexport const p = openStore;\n";
    expect(await ruleIds('src/cli/probe.ts', root)).toEqual([]);
  });

  it('a store kind added later is as closed to the layers above as postgres/ and memory/', async () => {
    // The rule is a pattern over store/*/, so a new kind needs no lint edit. The import must resolve
    // for the rule to look at it, so a throwaway kind folder exists for the length of this test.
    const kind = `lint-probe-${randomBytes(4).toString('hex')}`;
    const dir = path.join('src/store', kind);
    await mkdir(dir);
    try {
      await writeFile(path.join(dir, 'probe-store.ts'), 'export const ProbeStore = 1;\n');
      const code = `import { ProbeStore } from '../store/${kind}/probe-store.js';\nexport const p = ProbeStore;\n`;
      for (const layer of ['cli', 'server', 'engine', 'agent', 'sweeper']) {
        expect(await ruleIds(`src/${layer}/probe.ts`, code), layer).toContain('import-x/no-restricted-paths');
      }
      const fromRoot = `import { ProbeStore } from './${kind}/probe-store.js';\nexport const p = ProbeStore;\n`;
      expect(await ruleIds('src/store/open-store.ts', fromRoot)).not.toContain('import-x/no-restricted-paths');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a clean file in the right place passes', async () => {
    const ids = await ruleIds('src/engine/probe.ts', "import type { JournalStore } from '../store/store.js';\nexport type P = JournalStore;\n");
    expect(ids).toEqual([]);
  });
});
