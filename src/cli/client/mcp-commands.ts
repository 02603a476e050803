import type { MessageInitShape } from '@bufbuild/protobuf';
import type { McpSecretRefSchema, McpServer, McpToolRuleSchema } from '@waymark-dev/client';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { McpServerSchema, PutMcpServerResponseSchema, ToolPolicy } from '@waymark-dev/client';
import { call, list, str, type CommandSpec } from './command-spec.js';
import { EXIT, UsageError } from './exit-codes.js';
import { table } from './format.js';
import { headerBold } from './runs-commands.js';

/* `waymark mcp add|list|remove`: the MCP servers whose tools the namespace's runs may call (McpService, docs/mcp.md). */

const POLICIES: Record<string, ToolPolicy> = { allow: ToolPolicy.ALLOW, ask: ToolPolicy.ASK, deny: ToolPolicy.DENY };
const POLICY_NAMES: Record<number, string> = { [ToolPolicy.UNSPECIFIED]: 'allow', [ToolPolicy.ALLOW]: 'allow', [ToolPolicy.ASK]: 'ask', [ToolPolicy.DENY]: 'deny' };

/** `K=V` pairs of a repeatable option; a pair without `=` is a usage error naming the option. */
function pairs(values: string[], option: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    const at = v.indexOf('=');
    if (at <= 0) throw new UsageError(`--${option} takes NAME=VALUE; got "${v}"`);
    out[v.slice(0, at)] = v.slice(at + 1);
  }
  return out;
}

/**
 * `--header-ref "authorization=Bearer env:MCP_TOKEN"`: a header whose value each replica reads when
 * it connects, from its environment (`env:`) or a file (`file:`); text before the reference, up to
 * a space, is sent before the value.
 */
export function headerRef(spec: string): [string, MessageInitShape<typeof McpSecretRefSchema>] {
  const at = spec.indexOf('=');
  const m = at <= 0 ? null : /^(|.*\s)(env|file):(\S+)$/.exec(spec.slice(at + 1));
  if (!m) throw new UsageError(`--header-ref takes NAME=[PREFIX ]env:VARIABLE or NAME=[PREFIX ]file:/PATH, e.g. "authorization=Bearer env:MCP_TOKEN"; got "${spec}"`);
  return [spec.slice(0, at), { source: { case: m[2] as 'env' | 'file', value: m[3]! }, prefix: m[1]! }];
}

/** A header reference as `mcp list` prints it: `authorization=Bearer env:MCP_TOKEN`. */
function refText(name: string, r: { source: { case?: string; value?: string }; prefix: string }): string {
  return `${name}=${r.prefix}${r.source.case ?? '?'}:${r.source.value ?? ''}`;
}

/** `--tool refund=ask,mutating,timeout=5000`: a tool's policy, then optional `mutating`/`readonly` and `timeout=MS`. */
export function toolRule(spec: string): [string, MessageInitShape<typeof McpToolRuleSchema>] {
  const at = spec.indexOf('=');
  const name = at < 0 ? spec : spec.slice(0, at);
  const parts = at < 0 ? [] : spec.slice(at + 1).split(',');
  if (name === '') throw new UsageError(`--tool takes NAME[=POLICY[,mutating|readonly][,timeout=MS]]; got "${spec}"`);
  const rule: { policy: ToolPolicy; mutating?: boolean; timeoutMs?: number } = { policy: ToolPolicy.ALLOW };
  for (const part of parts) {
    if (part in POLICIES) rule.policy = POLICIES[part]!;
    else if (part === 'mutating') rule.mutating = true;
    else if (part === 'readonly') rule.mutating = false;
    else if (/^timeout=[1-9][0-9]*$/.test(part)) rule.timeoutMs = Number(part.slice('timeout='.length));
    else throw new UsageError(`--tool ${name}: "${part}" is none of allow, ask, deny, mutating, readonly, timeout=MS`);
  }
  return [name, rule];
}

const add: CommandSpec = {
  group: 'mcp', name: 'add', args: ['<name>'],
  summary: 'Registers an MCP server (or replaces the registration of that name): Streamable HTTP with --url, or a local command with --command.',
  details: 'Runs call its tools as ctx.tool("<name>.<tool>", args). Without --tool every tool the server lists is exposed with policy allow; with --tool only those listed are. Needs an admin key when the server has authentication on.',
  options: {
    url: { type: 'string', value: 'URL', help: 'the server\'s Streamable HTTP endpoint' },
    header: { type: 'string', value: 'NAME=VALUE', multiple: true, help: 'a header sent with every request (e.g. authorization=Bearer …); stored as given' },
    'header-ref': {
      type: 'string', value: 'NAME=[PREFIX ]env:VAR|file:PATH', multiple: true,
      help: 'a header whose value each replica reads when it connects: its MCP_ environment variable, or a file inside its WAYMARK_MCP_SECRET_DIR (the value is stored nowhere)',
    },
    command: { type: 'string', value: 'CMD', help: 'a command speaking MCP over stdio, started by the replica (local development)' },
    arg: { type: 'string', value: 'ARG', multiple: true, help: 'an argument of --command' },
    env: { type: 'string', value: 'NAME=VALUE', multiple: true, help: 'an environment variable of --command' },
    tool: { type: 'string', value: 'NAME[=POLICY[,mutating|readonly][,timeout=MS]]', multiple: true, help: 'a tool to expose, its policy (allow, ask, deny) and overrides' },
  },
  examples: [
    'waymark mcp add billing --url https://mcp.example.com/mcp --header-ref "authorization=Bearer env:MCP_BILLING_TOKEN" --tool refund=ask --tool lookup',
    'waymark mcp add local --command node --arg ./my-mcp-server.mjs --arg=--stdio',
  ],
  async run(inv) {
    const [name] = inv.args as [string];
    const url = str(inv, 'url');
    const command = str(inv, 'command');
    if ((url === undefined) === (command === undefined)) throw new UsageError('give exactly one of --url (Streamable HTTP) and --command (stdio)');
    if (url !== undefined && (list(inv, 'arg').length > 0 || list(inv, 'env').length > 0)) throw new UsageError('--arg and --env go with --command, not --url');
    if (command !== undefined && (list(inv, 'header').length > 0 || list(inv, 'header-ref').length > 0)) throw new UsageError('--header and --header-ref go with --url, not --command');
    const transport = url !== undefined
      ? { case: 'http' as const, value: { url, headers: pairs(list(inv, 'header'), 'header'), headerRefs: Object.fromEntries(list(inv, 'header-ref').map(headerRef)) } }
      : { case: 'stdio' as const, value: { command: command!, args: list(inv, 'arg'), env: pairs(list(inv, 'env'), 'env') } };
    const tools = Object.fromEntries(list(inv, 'tool').map(toolRule));
    const client = inv.client();
    const r = await client.mcp.putMcpServer({ namespace: client.namespace, server: { name, transport, tools } }, call(inv));
    if (inv.out.json) {
      inv.out.jsonLine(PutMcpServerResponseSchema, r);
      return EXIT.ok;
    }
    const exposed = Object.keys(r.server?.tools ?? {});
    inv.out.print(`MCP server ${name} ${r.created ? 'registered' : 'replaced'}; tools: ${exposed.length === 0 ? 'every tool it lists (allow)' : exposed.join(', ')}`);
    return EXIT.ok;
  },
};

const ls: CommandSpec = {
  group: 'mcp', name: 'list', args: [],
  summary: 'Lists the MCP servers of the namespace: transport, exposed tools and their policies (header and env values are never shown; header references are), and each server\'s health as the answering replica sees it (last success, last error, reconnect backoff).',
  options: {},
  examples: ['waymark mcp list', 'waymark mcp list -o json'],
  async run(inv) {
    const client = inv.client();
    const { servers } = await client.mcp.listMcpServers({ namespace: client.namespace }, call(inv));
    if (inv.out.json) {
      for (const s of servers) inv.out.jsonLine(McpServerSchema, s);
      return EXIT.ok;
    }
    const rows = servers.map((s) => {
      const t = s.transport;
      const refs = t.case === 'http' ? Object.entries(t.value.headerRefs).map(([n, r]) => refText(n, r)).sort() : [];
      const where = t.case === 'http' ? [t.value.url, ...refs].join(' ') : t.case === 'stdio' ? [t.value.command, ...t.value.args].join(' ') : '-';
      const tools = Object.entries(s.tools).map(([n, r]) => `${n}=${POLICY_NAMES[r.policy] ?? '?'}${r.mutating === undefined ? '' : r.mutating ? ',mutating' : ',readonly'}`);
      return [s.name, t.case ?? '-', where, tools.join(' ') || '(all, allow)'];
    });
    if (rows.length === 0) {
      inv.out.print('no MCP servers are registered');
      return EXIT.ok;
    }
    inv.out.print(table(['NAME', 'TRANSPORT', 'WHERE', 'TOOLS'], rows, headerBold(inv.out)));
    // Health is the answering replica's view (each replica has its own connections): a table of its own, naming the replica.
    const replica = servers.map((s) => s.health?.replica).find((r) => r) ?? 'the answering replica';
    inv.out.print(`\n${table(['NAME', `HEALTH (seen from ${replica})`], servers.map((s) => [s.name, healthText(s.health)]), headerBold(inv.out))}`);
    return EXIT.ok;
  },
};

const remove: CommandSpec = {
  group: 'mcp', name: 'remove', args: ['<name>'],
  summary: 'Removes an MCP server registration (exit 3 when there is none); runs that already pinned its tools keep their pin.',
  options: {},
  examples: ['waymark mcp remove billing'],
  async run(inv) {
    const [name] = inv.args as [string];
    const client = inv.client();
    await client.mcp.removeMcpServer({ namespace: client.namespace, name }, call(inv));
    if (!inv.out.json) inv.out.print(`MCP server ${name} removed`);
    return EXIT.ok;
  },
};

/** The answering replica's view of the server: `ok (last success …)`, `unreachable since … (3 failures): <error>`, or `not tried`. */
function healthText(h: McpServer['health']): string {
  if (!h) return 'not tried';
  const at = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : 'never');
  if (h.state === 'ok') return `ok (last success ${at(h.lastSuccessTime)})`;
  return `unreachable (${h.consecutiveFailures} failure${h.consecutiveFailures === 1 ? '' : 's'}, last ${at(h.lastErrorTime)}: ${h.lastError}; last success ${at(h.lastSuccessTime)})`;
}

export const MCP_COMMANDS: CommandSpec[] = [add, ls, remove];
