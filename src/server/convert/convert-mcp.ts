import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  McpServerHealthSchema, McpServerSchema, type McpSecretRef as McpSecretRefMessage, type McpServer, type McpServerHealth as McpServerHealthMessage,
} from '../../gen/waymark/v1/mcp_service_pb.js';
import type { McpSecretRef, McpServerHealth, McpServerRecord, McpToolRule, McpTransport } from '../../engine/index.js';
import type { RequestCheck } from './request-validation.js';
import { POLICY_FROM_PROTO, POLICY_TO_PROTO } from './convert-tool-policy.js';

/* McpService's messages <-> registrations (docs/mcp.md); header and environment values never leave the server. */

const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const TOOL_NAME = /^[A-Za-z0-9_./-]{1,128}$/;
const MAX_TOOLS = 256;
const MAX_TIMEOUT_MS = 3_600_000;
export const REDACTED_VALUE = '<redacted>';
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
/** What an `env` reference may name: the MCP_ prefix keeps a registration from reading the replica's own settings (docs/security.md). */
export const SECRET_ENV_NAME = /^MCP_[A-Za-z0-9_]{1,120}$/;


/** The registration a PutMcpServer request asks for; every problem is a violation of `c` under `server.`. */
export function mcpServerFromProto(c: RequestCheck, server: McpServer): { name: string; transport: McpTransport; tools: Record<string, McpToolRule> } {
  if (!SERVER_NAME.test(server.name)) c.fail('server.name', 'must be 1 to 64 of A-Z a-z 0-9 _ - (it prefixes the tools: ctx.tool("name.tool"))');
  let transport: McpTransport = { kind: 'http', url: '', headers: {} };
  const t = server.transport;
  if (t.case === 'http') {
    let url: URL | null;
    try {
      url = new URL(t.value.url);
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) c.fail('server.http.url', 'must be an http or https URL');
    const headerRefs = secretRefsFromProto(c, t.value.headerRefs, t.value.headers);
    transport = { kind: 'http', url: t.value.url, headers: { ...t.value.headers }, ...(Object.keys(headerRefs).length > 0 ? { headerRefs } : {}) };
  } else if (t.case === 'stdio') {
    if (t.value.command.trim() === '') c.fail('server.stdio.command', 'is required');
    transport = { kind: 'stdio', command: t.value.command, args: [...t.value.args], env: { ...t.value.env } };
  } else {
    c.fail('server.transport', 'is required: http (Streamable HTTP) or stdio (a local command)');
  }
  const entries = Object.entries(server.tools);
  if (entries.length > MAX_TOOLS) c.fail('server.tools', `at most ${MAX_TOOLS} tools`);
  const tools: Record<string, McpToolRule> = {};
  for (const [name, rule] of entries) {
    const field = `server.tools["${name.slice(0, 64)}"]`;
    if (!TOOL_NAME.test(name)) c.fail(field, 'a tool name is 1 to 128 of A-Z a-z 0-9 _ - . /');
    const policy = POLICY_FROM_PROTO[rule.policy];
    if (!policy) c.fail(`${field}.policy`, 'must be allow, ask or deny');
    if (rule.timeoutMs > MAX_TIMEOUT_MS) c.fail(`${field}.timeout_ms`, `at most ${MAX_TIMEOUT_MS} (an hour)`);
    tools[name] = { policy: policy ?? 'allow', mutating: rule.mutating ?? null, timeoutMs: rule.timeoutMs > 0 ? rule.timeoutMs : null };
  }
  return { name: server.name, transport, tools };
}

/** `header_refs`: each a header name not also in `headers`, and exactly one of an `MCP_` variable or an absolute file path. */
function secretRefsFromProto(c: RequestCheck, refs: Record<string, McpSecretRefMessage>, headers: Record<string, string>): Record<string, McpSecretRef> {
  const inline = new Set(Object.keys(headers).map((h) => h.toLowerCase()));
  const out: Record<string, McpSecretRef> = {};
  for (const [header, ref] of Object.entries(refs)) {
    const field = `server.http.header_refs["${header.slice(0, 64)}"]`;
    if (!HEADER_NAME.test(header)) c.fail(field, 'a header name is 1 to 128 letters, digits or !#$%&\'*+.^_`|~-');
    if (inline.has(header.toLowerCase())) c.fail(field, 'the header is also in `headers`: give it one value, inline or by reference');
    if (/[\r\n]/.test(ref.prefix)) c.fail(`${field}.prefix`, 'may not contain a line break');
    const s = ref.source;
    if (s.case === 'env') {
      if (!SECRET_ENV_NAME.test(s.value)) c.fail(`${field}.env`, 'must name a variable starting with MCP_ (letters, digits, _), e.g. MCP_BILLING_TOKEN');
      out[header] = { source: 'env', name: s.value, prefix: ref.prefix };
    } else if (s.case === 'file') {
      if (!s.value.startsWith('/') || s.value.split('/').includes('..')) c.fail(`${field}.file`, 'must be an absolute path without ".." (inside the replica\'s WAYMARK_MCP_SECRET_DIR)');
      out[header] = { source: 'file', name: s.value, prefix: ref.prefix };
    } else {
      c.fail(field, 'needs env (a replica environment variable) or file (a path on the replica)');
    }
  }
  return out;
}

/** A registration as the API shows it: header and environment values redacted; header references as given. */
export function mcpServerToProto(s: McpServerRecord & { health?: McpServerHealth | null }): McpServer {
  const redact = (m: Record<string, string>): Record<string, string> => Object.fromEntries(Object.keys(m).map((k) => [k, REDACTED_VALUE]));
  const t = s.transport;
  return create(McpServerSchema, {
    namespace: s.namespace,
    name: s.name,
    transport: t.kind === 'http'
      ? { case: 'http', value: { url: t.url, headers: redact(t.headers), headerRefs: Object.fromEntries(Object.entries(t.headerRefs ?? {}).map(([h, r]) => [h, { source: { case: r.source, value: r.name }, prefix: r.prefix }])) } }
      : { case: 'stdio', value: { command: t.command, args: t.args, env: redact(t.env) } },
    tools: Object.fromEntries(Object.entries(s.tools).map(([name, r]) => [name, {
      policy: POLICY_TO_PROTO[r.policy], ...(r.mutating !== null ? { mutating: r.mutating } : {}), timeoutMs: r.timeoutMs ?? 0,
    }])),
    createTime: timestampFromDate(s.createdAt),
    updateTime: timestampFromDate(s.updatedAt),
    ...(s.health ? { health: healthToProto(s.health) } : {}),
  });
}

function healthToProto(h: McpServerHealth): McpServerHealthMessage {
  const at = (d: Date | null) => (d ? timestampFromDate(d) : undefined);
  return create(McpServerHealthSchema, {
    state: h.state, lastSuccessTime: at(h.lastSuccessAt), lastError: h.lastError ?? '', lastErrorTime: at(h.lastErrorAt),
    consecutiveFailures: h.consecutiveFailures, nextAttemptTime: at(h.nextAttemptAt), replica: h.replica,
  });
}
