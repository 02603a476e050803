import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import type { McpToolRule, McpTransport } from '../../src/store/store.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import type { Registry } from '../../src/engine/registry.js';
import type { EffectTracer } from '../../src/engine/runtime/effect-tracer.js';
import { SdkMcpConnector, type SdkMcpConnectorOptions } from '../../src/mcp/sdk-mcp-connector.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock, NS, TTL } from '../engine/harness.js';

/* The counting MCP server (fixtures/counting-mcp-server.mjs) as the tests start it: over Streamable HTTP, or as a stdio command. */

const FIXTURE = path.resolve('test/mcp/fixtures/counting-mcp-server.mjs');
const TASK_FIXTURE = path.resolve('test/mcp/fixtures/task-mcp-server.mjs');

export interface Delivery {
  tool: string;
  key: string | null;
  header: string | null;
  args: Record<string, unknown>;
  /** The `_meta` traceparent of the call (null when the engine does not trace). */
  traceparent?: string | null;
  /** The task server's deliveries: the task the line is about. */
  taskId?: string | null;
}

/** A scratch folder with the deliveries file of one test file's servers. */
export function deliveriesLog(): { file: string; read(): Delivery[]; of(tool: string): Delivery[]; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'waymark-mcp-'));
  const file = path.join(dir, 'deliveries.jsonl');
  const read = (): Delivery[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Delivery) : []);
  return { file, read, of: (tool) => read().filter((d) => d.tool === tool), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Starts the server over Streamable HTTP; resolves once it listens. */
export function startHttpMcpServer(deliveries: string, env: Record<string, string> = {}): Promise<{ url: string; process: ChildProcess; stop(): Promise<void> }> {
  return startMcpProcess([FIXTURE, '--http'], { MCP_DELIVERIES: deliveries, ...env });
}

/**
 * Starts the task server (fixtures/task-mcp-server.mjs; `stateful`: with MCP sessions, which its
 * questions need); `slow_refund` of order X finishes once the file `<releaseDir>/X` exists.
 */
export function startTaskMcpServer(deliveries: string, releaseDir: string, options: { stateful?: boolean } = {}): Promise<{ url: string; process: ChildProcess; stop(): Promise<void> }> {
  return startMcpProcess([TASK_FIXTURE, ...(options.stateful ? ['--stateful'] : [])], { MCP_DELIVERIES: deliveries, MCP_RELEASE_DIR: releaseDir });
}

async function startMcpProcess(args: string[], env: Record<string, string>): Promise<{ url: string; process: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`the MCP test server exited (${code}) before listening`)));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** The registration transport of the server as a stdio command (the replica starts it). */
export function stdioMcpTransport(deliveries: string): McpTransport {
  return { kind: 'stdio', command: process.execPath, args: [FIXTURE, '--stdio'], env: { MCP_DELIVERIES: deliveries } };
}

export const allowRule: McpToolRule = { policy: 'allow', mutating: null, timeoutMs: null };

/** Every connector mcpEngine made and closeMcpEngines has not closed yet. */
const opened: SdkMcpConnector[] = [];

/** Closes the connectors of every engine mcpEngine made (a test file's afterAll). */
export async function closeMcpEngines(): Promise<void> {
  await Promise.all(opened.splice(0).map((c) => c.close()));
}

/**
 * An engine on a memory store with `servers` registered in namespace NS (default transport: `url`
 * over Streamable HTTP) and a real SdkMcpConnector, closed by closeMcpEngines.
 */
export async function mcpEngine(
  registry: Registry, url: string, servers: Record<string, { transport?: McpTransport; tools?: Record<string, McpToolRule> }>,
  connector: Omit<SdkMcpConnectorOptions, 'store'> = {},
  tracer: EffectTracer | null = null,
) {
  const clock = new FakeClock();
  const store = new MemoryStore({ clock: clock.now });
  for (const [name, s] of Object.entries(servers)) {
    await store.mcpServerPut({ namespace: NS, name, transport: s.transport ?? { kind: 'http', url, headers: {} }, tools: s.tools ?? {} });
  }
  const mcp = new SdkMcpConnector({ store, ...connector });
  opened.push(mcp);
  const engine = new RunEngine({ store, registry, holder: 'replica-1', leaseTtlMs: TTL, clock: clock.now, mcp, ...(tracer ? { tracer } : {}) });
  return { store, engine, mcp, clock };
}
