import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { WaymarkError } from '../journal/errors.js';
import type { McpSecretRef, McpServerRecord } from '../engine/index.js';

/*
 * Header references of Streamable HTTP registrations (docs/mcp.md "Authentication"): a header
 * whose value the replica reads from its own environment (`env:MCP_…`) or from a file inside its
 * secrets directory, when it connects. The value lives only in the replica's memory, in the
 * connection's headers: it is never journaled, stored or returned by the API.
 */

/** The replica's environment variable naming the only directory `file` references may read from. */
export const SECRET_DIR_VARIABLE = 'WAYMARK_MCP_SECRET_DIR';

/** Where references are read: the replica's environment (default process.env), which also names the secrets directory. */
export interface McpSecretSource {
  env: NodeJS.ProcessEnv;
}

/**
 * A header reference could not be read on this replica (an unset variable, a missing file, file
 * references turned off). Not retried: the replica's configuration has to change first; the
 * message names the server, the header and what to set. Raised before anything is sent.
 */
export class McpSecretUnavailableError extends WaymarkError {
  readonly reason = 'MCP_SECRET_UNAVAILABLE';
  readonly nonRetryable = true;
  constructor(readonly server: string, readonly header: string, readonly ref: string, why: string) {
    super(`MCP server "${server}": header "${header}" refers to ${ref}, ${why}; fix the replica's configuration and resume the run (docs/mcp.md "Authentication")`);
  }
}

/** The headers of an HTTP registration with its references read: inline headers, then each reference's prefix and value. */
export async function resolvedHeaders(server: McpServerRecord, source: McpSecretSource): Promise<Record<string, string>> {
  const t = server.transport;
  if (t.kind !== 'http') return {};
  const headers = { ...t.headers };
  for (const [header, ref] of Object.entries(t.headerRefs ?? {})) {
    headers[header] = ref.prefix + await read(server.name, header, ref, source);
  }
  return headers;
}

async function read(server: string, header: string, ref: McpSecretRef, source: McpSecretSource): Promise<string> {
  const fail = (why: string): never => {
    throw new McpSecretUnavailableError(server, header, `${ref.source}:${ref.name}`, why);
  };
  if (ref.source === 'env') {
    // Checked again here: a row written by hand (or before the rule) must not read the replica's own settings.
    if (!ref.name.startsWith('MCP_')) return fail('which is not an MCP_ variable (only those may be referenced)');
    const value = source.env[ref.name];
    if (value === undefined || value === '') return fail('which is not set on this replica');
    return value;
  }
  const dir = source.env[SECRET_DIR_VARIABLE];
  if (!dir) return fail(`but file references are off on this replica: set ${SECRET_DIR_VARIABLE} to the directory holding MCP secrets`);
  let real: string;
  let realDir: string;
  try {
    [real, realDir] = await Promise.all([realpath(ref.name), realpath(dir)]);
  } catch (error) {
    return fail(`which cannot be read on this replica (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  // After symlinks: a link inside the directory pointing out of it is refused too.
  if (real !== realDir && !real.startsWith(realDir + path.sep)) return fail(`which is outside ${SECRET_DIR_VARIABLE} (${dir})`);
  const value = (await readFile(real, 'utf8').catch((error: NodeJS.ErrnoException) => fail(`which cannot be read on this replica (${error.code ?? String(error)})`))).trimEnd();
  if (value === '') return fail('which is empty');
  return value;
}
