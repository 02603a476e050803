import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAgentRuntime, type AgentRuntimeOptions } from '../../src/agent/agent-runtime.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { loadUserModule } from '../../src/engine/user-module.js';
import type { JournalEntry } from '../../src/journal/journal-entry.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { JournalStore } from '../../src/store/store.js';
import { FakeClock } from '../engine/harness.js';
import type { FakeOpenAIServer } from '../support/fake-openai-server.js';
import { WaymarkProcess } from '../support/waymark-process.js';

export const NS = 'test';
export const TTL = 30_000;
export const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
export const AGENT_WORKFLOWS = path.join(FIXTURES, 'agent-workflows.ts');
export const BUDGET_WORKFLOWS = path.join(FIXTURES, 'budget-workflows.ts');

/** Model settings pointing the `compatible` endpoint at the fake server, with a price for its model. */
export function fakeModelEnv(server: FakeOpenAIServer, price = { input: 1, output: 1 }): Record<string, string> {
  return {
    WAYMARK_MODEL_BASE_URL: server.baseURL,
    WAYMARK_MODEL_PRICES: JSON.stringify({ 'compatible:fake-model': price }),
  };
}

/** An engine over `store` (a MemoryStore on a fake clock by default) with the agent fixtures loaded. */
export async function agentEngine(options: { runtime: AgentRuntimeOptions; store?: JournalStore; clock?: FakeClock; holder?: string; clockless?: boolean }) {
  const clock = options.clock ?? new FakeClock();
  const store = options.store ?? new MemoryStore({ clock: clock.now });
  const registry = new Registry({ agent: createAgentRuntime({ maxRetries: 0, ...options.runtime }) });
  await loadUserModule(AGENT_WORKFLOWS, registry);
  const engine = new RunEngine({
    store, registry, holder: options.holder ?? 'worker-1', leaseTtlMs: TTL, ...(options.clockless ? {} : { clock: clock.now }),
  });
  return { clock, store, registry, engine };
}

/** Non-status entries as `status kind name` strings: easy to read in a failure. */
export function shape(entries: JournalEntry[]): string[] {
  return entries.filter((e) => e.kind !== 'status').map((e) => `${e.status} ${e.kind} ${e.name}`);
}

/**
 * A real `waymark server` or `waymark dev` process loading `module`, on `databaseUrl`, with its
 * models pointed at the fake provider, short leases and a fast sweep (what the crash tests need),
 * and no real provider keys.
 */
export function agentProcess(command: 'server' | 'dev', options: {
  module: string; server: FakeOpenAIServer; databaseUrl: string; price?: { input: number; output: number }; env?: Record<string, string>;
}): WaymarkProcess {
  return WaymarkProcess.start([command, '--workflows', options.module], {
    env: {
      ...fakeModelEnv(options.server, options.price), DATABASE_URL: options.databaseUrl, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_METRICS_ADDR: '127.0.0.1:0',
      WAYMARK_LEASE_TTL_MS: '3000', WAYMARK_SWEEP_INTERVAL_MS: '250',
      OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '', WAYMARK_DEFAULT_MODEL: '', ...options.env,
    },
  });
}
