// engine/: the Registry, the workflows, tools and agent runtime a server knows, by name.
// Must not execute anything or import src/agent: it holds definitions only.
import { WorkflowNotFoundError } from '../journal/errors.js';
import type { AgentRuntime } from './author/agent-contract.js';
import type { PayloadSealer } from './access/payload-sealer.js';
import { builtinTools } from './author/builtin-tools.js';
import { DefinitionError, ToolNotFoundError } from './errors.js';
import { isTool, type Tool } from './author/tool.js';
import { isWorkflow, type Workflow } from './author/workflow.js';

/**
 * The workflows and tools a server knows, by name. The built-in tools (`http`, `echo`) are
 * registered unless `builtinTools: false`. Registering a different definition under a taken name
 * is refused; registering the same object again is a no-op (a module imported twice). `agent` is
 * what runs `ctx.agent` (src/agent's createAgentRuntime; the engine cannot import it): models are
 * resolved by name here as workflows and tools are, and every execution and preview finds it.
 */
export class Registry {
  private readonly workflowsByName = new Map<string, Workflow>();
  private readonly toolsByName = new Map<string, Tool>();
  readonly agentRuntime: AgentRuntime | null;
  /** Seals the payloads of secret tools (WAYMARK_SECRETS_KEYS); null: no key, and no secret tool may be registered. */
  readonly sealer: PayloadSealer | null;

  constructor(options: { builtinTools?: boolean; agent?: AgentRuntime; sealer?: PayloadSealer | null } = {}) {
    this.agentRuntime = options.agent ?? null;
    this.sealer = options.sealer ?? null;
    if (options.builtinTools ?? true) for (const tool of builtinTools()) this.register(tool);
  }

  /** Registers workflows and tools; anything else is refused with DefinitionError. */
  register(...items: (Workflow | Tool)[]): this {
    for (const item of items) {
      if (isWorkflow(item)) add(this.workflowsByName, item, 'workflow');
      else if (isTool(item)) {
        if (item.secret && !this.sealer) {
          throw new DefinitionError(`tool "${item.name}"`, 'is marked secret, so its payloads are sealed: set WAYMARK_SECRETS_KEYS (docs/security.md "Secrets")');
        }
        add(this.toolsByName, item, 'tool');
      }
      else throw new DefinitionError('registry', 'only values made by defineWorkflow or defineTool can be registered');
    }
    return this;
  }

  has(name: string): boolean {
    return this.workflowsByName.has(name);
  }

  /** Throws WorkflowNotFoundError for an unknown name. */
  workflow(name: string): Workflow {
    const workflow = this.workflowsByName.get(name);
    if (!workflow) throw new WorkflowNotFoundError(name);
    return workflow;
  }

  /** Whether an in-process tool has this name (otherwise ctx.tool looks for a remote tool, docs/workers.md). */
  hasTool(name: string): boolean {
    return this.toolsByName.has(name);
  }

  /** Throws ToolNotFoundError for an unknown name. */
  tool(name: string): Tool {
    const tool = this.toolsByName.get(name);
    if (!tool) throw new ToolNotFoundError(name);
    return tool;
  }

  workflows(): Workflow[] {
    return [...this.workflowsByName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  tools(): Tool[] {
    return [...this.toolsByName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }
}

function add<T extends { name: string }>(map: Map<string, T>, item: T, what: string): void {
  const existing = map.get(item.name);
  if (existing && existing !== item) {
    throw new DefinitionError(`${what} "${item.name}"`, `another ${what} is already registered under this name; names must be unique`);
  }
  map.set(item.name, item);
}
