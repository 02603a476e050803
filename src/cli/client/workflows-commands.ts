import { DriftPolicy, WorkflowSchema } from '@waymark-dev/client';
import type { CommandSpec } from './command-spec.js';
import { EXIT } from './exit-codes.js';
import { table } from './format.js';
import { headerBold } from './runs-commands.js';

/* `waymark workflows list`: what the store's live replicas serve. */

const listWorkflows: CommandSpec = {
  group: 'workflows', name: 'list', args: [],
  summary: "Lists the workflows the store's live replicas serve, one row per definition (during a rollout a name appears once per digest).",
  options: {},
  examples: ['waymark workflows list', 'waymark workflows list -o json | jq -r .name'],
  async run(inv) {
    const workflows = await inv.client().listWorkflows({ timeoutMs: inv.timeoutMs, signal: inv.signal });
    if (inv.out.json) {
      for (const w of workflows) inv.out.jsonLine(WorkflowSchema, w);
      return EXIT.ok;
    }
    const rows = workflows.map((w) => [w.name, w.version, w.digest.slice(0, 12), (DriftPolicy[w.driftPolicy] ?? '').toLowerCase(), String(w.replicas.length), w.description]);
    inv.out.print(rows.length === 0 ? 'no workflows are served' : table(['NAME', 'VERSION', 'DIGEST', 'DRIFT', 'REPLICAS', 'DESCRIPTION'], rows, headerBold(inv.out)));
    return EXIT.ok;
  },
};

export const WORKFLOWS_COMMANDS: CommandSpec[] = [listWorkflows];
