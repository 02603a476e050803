import { fromValue, ServedToolSchema, type JsonValue } from '@waymark-dev/client';
import { call, type CommandSpec } from './command-spec.js';
import { EXIT } from './exit-codes.js';
import { table } from './format.js';
import { headerBold } from './runs-commands.js';

/* `waymark tools list`: the tools runs of the namespace can call, and for remote ones who serves them (WorkerService.ListTools). */

/** A JSON Schema's top-level properties, `{ order, amount }`, or `-` when it declares none. */
function schemaShape(schema: JsonValue | undefined): string {
  const properties = schema !== null && typeof schema === 'object' && !Array.isArray(schema) ? schema.properties : undefined;
  if (properties === null || typeof properties !== 'object' || Array.isArray(properties)) return '-';
  const names = Object.keys(properties);
  return names.length === 0 ? '{}' : `{ ${names.join(', ')} }`;
}

const listTools: CommandSpec = {
  group: 'tools', name: 'list', args: [],
  summary: 'Lists the tools runs of this namespace can call: remote tools with their live workers (0: calls wait for one), then the in-process tools.',
  details: 'The table shows each input schema\'s top-level fields; -o json prints every declaration in full, schemas included.',
  options: {},
  examples: ['waymark tools list', 'waymark tools list -o json | jq \'select(.remote) | {name: .declaration.name, liveWorkers}\''],
  async run(inv) {
    const client = inv.client();
    const { tools } = await client.workers.listTools({ namespace: client.namespace }, call(inv));
    if (inv.out.json) {
      for (const t of tools) inv.out.jsonLine(ServedToolSchema, t);
      return EXIT.ok;
    }
    const rows = tools.map((t) => {
      const d = t.declaration;
      const input = schemaShape(fromValue(d?.inputSchema));
      return [d?.name ?? '', t.remote ? 'remote' : 'in process', t.remote ? String(t.liveWorkers) : '-', t.workers.join(', ') || '-', input, d?.description ?? ''];
    });
    inv.out.print(rows.length === 0 ? 'no tools are served' : table(['NAME', 'KIND', 'LIVE WORKERS', 'WORKERS', 'INPUT', 'DESCRIPTION'], rows, headerBold(inv.out)));
    return EXIT.ok;
  },
};

export const TOOLS_COMMANDS: CommandSpec[] = [listTools];
