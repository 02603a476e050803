import { readFileSync } from 'node:fs';
import { create, toJson } from '@bufbuild/protobuf';
import { FlowSchema, FlowVersionSchema, RegisterFlowResponseSchema, type FlowVersion, type JsonValue } from '@waymark-dev/client';
import { parse as parseYaml } from 'yaml';
import { call, str, type CommandSpec } from './command-spec.js';
import { EXIT, UsageError } from './exit-codes.js';
import { formatTime, table } from './format.js';
import { headerBold } from './runs-commands.js';

/*
 * `waymark flows register|get|list`: declarative flows (docs/flows.md). A flow file is the Flow
 * message in its JSON form, written as JSON or YAML (YAML is a superset of JSON, so one parser
 * reads both); durations are protobuf durations ("86400s").
 */

/** The flow in `file` (or standard input for `-`), parsed; a bad file is a usage error naming it. */
export function readFlowFile(file: string, readStdin: () => string = () => readFileSync(0, 'utf8')): JsonValue {
  let text: string;
  try {
    text = file === '-' ? readStdin() : readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let value: unknown;
  try {
    value = parseYaml(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    throw new UsageError(`${file === '-' ? 'standard input' : file} is neither JSON nor YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(`${file === '-' ? 'standard input' : file} must hold one flow (an object with name, state_schema, start, nodes, edges)`);
  }
  return value as JsonValue;
}

const register: CommandSpec = {
  group: 'flows', name: 'register', args: ['<file>'],
  summary: 'Registers a declarative flow from a JSON or YAML file (- for standard input): the next version, or the latest again when the content is the same.',
  details: 'An invalid flow is refused (exit 2) with one line per problem, each naming its field (flow.nodes[2].tool.tool, ...), and nothing is stored. Needs an admin key when the server has authentication on.',
  options: {},
  examples: ['waymark flows register refund-flow.yaml', 'cat flow.json | waymark flows register -'],
  async run(inv) {
    const [file] = inv.args as [string];
    const json = readFlowFile(file);
    let r: { flow: FlowVersion; created: boolean };
    try {
      r = await inv.client().registerFlow(json, call(inv));
    } catch (err) {
      // fromJson refuses what is no Flow message (an unknown field, a wrong type) before any call.
      if (err instanceof Error && err.name !== 'ConnectError' && !('code' in err)) throw new UsageError(`${file} is not a flow: ${err.message}`);
      throw err;
    }
    if (inv.out.json) {
      inv.out.jsonLine(RegisterFlowResponseSchema, create(RegisterFlowResponseSchema, r));
      return EXIT.ok;
    }
    const name = r.flow.flow?.name ?? '?';
    inv.out.print(r.created
      ? `flow ${name} registered as version ${r.flow.version} (digest ${r.flow.digest.slice(0, 12)})`
      : `flow ${name} unchanged: version ${r.flow.version} has this content (digest ${r.flow.digest.slice(0, 12)})`);
    return EXIT.ok;
  },
};

const get: CommandSpec = {
  group: 'flows', name: 'get', args: ['<name>'],
  summary: 'Shows one version of a flow (the latest by default): its version, digest, and the flow as JSON.',
  options: { version: { type: 'string', value: 'N', help: 'the version to show (default the latest)' } },
  examples: ['waymark flows get refund-flow', 'waymark flows get refund-flow --version 1 -o json | jq .flow'],
  async run(inv) {
    const [name] = inv.args as [string];
    const version = str(inv, 'version');
    if (version !== undefined && !/^[1-9][0-9]*$/.test(version)) throw new UsageError(`--version must be a version number (1, 2, ...); got "${version}"`);
    const flow = await inv.client().getFlow(name, { ...call(inv), version });
    if (inv.out.json) {
      inv.out.jsonLine(FlowVersionSchema, flow);
      return EXIT.ok;
    }
    inv.out.print(`flow ${name} version ${flow.version}  digest ${flow.digest}  registered ${formatTime(flow.createTime)}`);
    inv.out.print(JSON.stringify(flow.flow ? toJson(FlowSchema, flow.flow) : {}, null, 2));
    return EXIT.ok;
  },
};

const listFlows: CommandSpec = {
  group: 'flows', name: 'list', args: [],
  summary: 'Lists the flows of the namespace, the latest version of each.',
  options: {},
  examples: ['waymark flows list', 'waymark flows list -o json | jq -r .flow.name'],
  async run(inv) {
    const flows = await inv.client().listFlows(call(inv));
    if (inv.out.json) {
      for (const f of flows) inv.out.jsonLine(FlowVersionSchema, f);
      return EXIT.ok;
    }
    const rows = flows.map((f) => [f.flow?.name ?? '?', f.version, f.digest.slice(0, 12), String(f.flow?.nodes.length ?? 0), f.flow?.description ?? '']);
    inv.out.print(rows.length === 0 ? 'no flows are registered in this namespace' : table(['NAME', 'VERSION', 'DIGEST', 'NODES', 'DESCRIPTION'], rows, headerBold(inv.out)));
    return EXIT.ok;
  },
};

export const FLOWS_COMMANDS: CommandSpec[] = [register, get, listFlows];
