// flow/: FlowCatalog, the flows of the store: registration (validate, then store) and the Workflow of a run's flow.
// Must not execute runs: engine.ts asks it for a flow's Workflow and executes that as it executes code.
import { WorkflowNotFoundError } from '../../journal/errors.js';
import type { Json } from '../../journal/run.js';
import type { FlowRecord, JournalStore } from '../../store/store.js';

export type { FlowRecord } from '../../store/store.js';
import { FlowNameTakenError, FlowNotFoundError, InvalidFlowError } from '../errors.js';
import type { Workflow } from '../author/workflow.js';
import type { Registry } from '../registry.js';
import { flowDigest, type FlowDefinition } from './flow-definition.js';
import { validateFlow, type FlowKnowledge } from './flow-validation.js';
import { flowWorkflow } from './flow-workflow.js';

/**
 * For each MCP tool name (`server.tool`) a flow uses, null when it exists or why not; the RunDriver
 * supplies it (runtime/mcp-flow-tools.ts), since flows reach MCP only through it.
 */
export type FlowMcpTools = (namespace: string, flow: FlowDefinition) => Promise<Map<string, string | null>>;

/** Built Workflows kept per (namespace, digest); a flow version never changes, so entries never go stale. */
const CACHE_MAX = 512;

/**
 * The flows a store holds (docs/flows.md). Flows live in the store, not in a replica's registry,
 * so every replica serves every flow as soon as it is registered; a run's flow is read from the
 * store when it executes (the latest version: a run pinned to another digest is drift).
 */
export class FlowCatalog {
  private readonly built = new Map<string, Workflow>();

  constructor(private readonly store: JournalStore, private readonly registry: Registry, private readonly mcpTools: FlowMcpTools | null = null) {}

  /**
   * Validates `flow` (InvalidFlowError with every field violation, nothing stored) and stores it
   * as the next version, or returns the latest version when its content is the same.
   */
  async register(params: { namespace: string; flow: FlowDefinition }): Promise<{ flow: FlowRecord; created: boolean }> {
    const { namespace, flow } = params;
    const limits = this.store.limits.definitions;
    // The size first: nothing is walked or read for a flow over it.
    const bytes = Buffer.byteLength(JSON.stringify(flow), 'utf8');
    if (bytes > limits.flowBytes) {
      throw new InvalidFlowError(typeof flow.name === 'string' ? flow.name : '?', [
        { field: 'flow', description: `is ${bytes} bytes of JSON; a flow may have at most ${limits.flowBytes} (WAYMARK_MAX_FLOW_BYTES)` },
      ]);
    }
    const codeNames = await this.codeWorkflowNames();
    if (typeof flow.name === 'string' && codeNames.has(flow.name)) throw new FlowNameTakenError(flow.name);
    const flowNames = new Set((await this.store.flowList({ namespace })).map((f) => f.name));
    const runtime = this.registry.agentRuntime;
    // Remote tools declared by the namespace's workers count too (docs/workers.md): a flow's tool node calls them by name.
    const remoteNames = new Set((await this.store.remoteToolList({ namespace })).map((t) => t.declaration.name));
    // MCP tools (`server.tool`) are checked against the namespace's registrations (flow-mcp-tools.ts).
    const mcpTools = this.mcpTools ? await this.mcpTools(namespace, flow) : new Map<string, string | null>();
    const knows: FlowKnowledge = {
      tool: (name) => this.registry.hasTool(name) || remoteNames.has(name),
      mcpTool: (name) => (mcpTools.has(name) ? mcpTools.get(name)! : `names tool "${name}", which is not registered`),
      workflow: (name) => codeNames.has(name) || flowNames.has(name) || name === flow.name,
      ...(runtime ? {
        model: (name: string) => {
          try {
            runtime.resolveModel(name);
            return null;
          } catch (error) {
            return (error as Error).message;
          }
        },
      } : {}),
    };
    const violations = await validateFlow(flow, knows, limits);
    if (violations.length > 0) throw new InvalidFlowError(typeof flow.name === 'string' ? flow.name : '?', violations);
    return this.store.flowRegister({ namespace, name: flow.name, digest: flowDigest(flow), definition: flow as unknown as Json });
  }

  /** One version, the latest by default; FlowNotFoundError when there is none. */
  async get(params: { namespace: string; name: string; version?: number }): Promise<FlowRecord> {
    const flow = await this.store.flowGet(params);
    if (!flow) throw new FlowNotFoundError(params.name, params.version ?? null);
    return flow;
  }

  list(params: { namespace: string }): Promise<FlowRecord[]> {
    return this.store.flowList(params);
  }

  /** The Workflow of the latest version of flow `name` in `namespace`; null when it is no flow there. */
  async workflowFor(namespace: string, name: string): Promise<Workflow | null> {
    const record = await this.store.flowGet({ namespace, name });
    return record ? this.workflowOf(record) : null;
  }

  /** The Workflow of one stored version (built once per namespace and digest). */
  workflowOf(record: FlowRecord): Workflow {
    const key = `${record.namespace}\u0000${record.digest}\u0000${record.name}\u0000${record.version}`;
    let workflow = this.built.get(key);
    if (!workflow) {
      workflow = flowWorkflow(record, (child) => this.childWorkflow(record.namespace, child), this.store.limits.definitions);
      if (this.built.size >= CACHE_MAX) this.built.clear();
      this.built.set(key, workflow);
    }
    return workflow;
  }

  /** What a child node starts: a code workflow this replica serves, else a flow of the namespace. */
  private async childWorkflow(namespace: string, name: string): Promise<Workflow> {
    if (this.registry.has(name)) return this.registry.workflow(name);
    const flow = await this.workflowFor(namespace, name);
    if (!flow) throw new WorkflowNotFoundError(name);
    return flow;
  }

  /** Code workflows of this replica and of every live replica: names a flow may not take. */
  private async codeWorkflowNames(): Promise<Set<string>> {
    const names = new Set(this.registry.workflows().map((w) => w.name));
    for (const replica of await this.store.replicaList()) for (const w of replica.workflows) names.add(w.name);
    return names;
  }
}
