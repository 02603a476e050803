// read/: what a run waits on now (GetRun's waiting_on, StartRun's and ResumeRun's answers): its open suspensions.
// Read-only: must not write the journal nor read all of it (the waits and what refers to them only).
import type { JournalStore } from '../../store/store.js';
import type { RemoteCalls } from '../runtime/remote-calls.js';
import type { McpConnector } from '../runtime/mcp-connector.js';
import { mcpToolName } from '../runtime/mcp-calls.js';
import { openWaits, waitingOf, type Waiting } from '../runtime/suspension.js';

/**
 * The open suspensions of run `runId`, read from its waits and what refers to them, not its journal
 * (issue 22); a remote tool's wait also says which workers could take its task (remote-calls.ts),
 * and an MCP call's retry backoff says when its server is unreachable from this replica.
 */
export async function runWaits(
  deps: { store: JournalStore; remote: RemoteCalls; mcp?: McpConnector | null },
  params: { runId: string; namespace: string },
): Promise<Waiting[]> {
  const waits = openWaits(await deps.store.journalWaits({ runId: params.runId, namespace: params.namespace })).map(waitingOf);
  const described = waits.some((w) => w.kind === 'tool') ? await deps.remote.describe(params, waits) : waits;
  const mcp = deps.mcp;
  return mcp ? described.map((w) => mcpBackoff(mcp, params.namespace, w)) : described;
}

/** A retry backoff of an MCP call whose server this replica cannot reach: the wait says so first (docs/mcp.md "Connections and health"). */
function mcpBackoff(mcp: McpConnector, namespace: string, w: Waiting): Waiting {
  // A call's backoff (`tool` server.tool) or its pin's (`step` mcp:<server>:tools/list).
  const pin = w.kind === 'step' ? /^mcp:([^:]+):tools\/list$/.exec(w.name) : null;
  const target = !w.backoff ? null : w.kind === 'tool' ? mcpToolName(w.name) : pin ? { server: pin[1]! } : null;
  const health = target ? mcp.health(namespace, target.server) : null;
  if (!target || !w.backoff || health?.state !== 'unreachable') return w;
  const since = health.lastSuccessAt ? `last answered ${health.lastSuccessAt.toISOString()}` : 'never answered';
  const detail = `MCP server "${target.server}" is unreachable from replica ${health.replica} (${health.consecutiveFailures} failed connection${health.consecutiveFailures === 1 ? '' : 's'}, ${since}; last error: ${health.lastError ?? 'unknown'}); ${w.backoff.detail}`;
  return { ...w, backoff: { detail } };
}
