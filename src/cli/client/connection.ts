import { readFileSync } from 'node:fs';
import { DEFAULT_ADDRESS, type ClientOptions, type TlsOptions } from '@waymark-dev/client';
import type { OptionSpec, Values } from './strict-options.js';
import type { OutputMode } from './output.js';
import { isLoopbackAddress, localKeyFile, localToken } from './local-token.js';
import { UsageError } from './exit-codes.js';
import { parseDuration } from './format.js';

/*
 * The options every operator command shares: where the server is, which namespace, the
 * credentials and TLS (the client package's ClientOptions), how to print and how long to wait.
 * Each falls back to an environment variable (docs/cli.md "Connection"); the TLS ones are named
 * apart from the server's own WAYMARK_TLS_*_FILE, so a shell set up for a server never hands the
 * server's certificate to the CLI.
 */

export const CONNECTION_OPTIONS: Record<string, OptionSpec> = {
  addr: { type: 'string', value: 'HOST:PORT', help: `the server (WAYMARK_ADDR, then WAYMARK_ADDRESS; default ${DEFAULT_ADDRESS}, where waymark dev listens)` },
  namespace: { type: 'string', short: 'n', value: 'NAME', help: "the namespace (WAYMARK_NAMESPACE; default the server's, \"default\")" },
  token: { type: 'string', value: 'TOKEN', help: 'bearer token sent with every call (WAYMARK_TOKEN; prefer the variable: flags show in ps). Default on a loopback address: waymark dev\'s key in WAYMARK_DATA_DIR/local-admin-key' },
  tls: { type: 'boolean', help: "TLS with Node's trusted CAs instead of plaintext HTTP/2 (WAYMARK_TLS=1)" },
  ca: { type: 'string', value: 'FILE', help: 'PEM of the CA to trust instead; implies --tls (WAYMARK_CA_FILE)' },
  cert: { type: 'string', value: 'FILE', help: 'PEM client certificate for mTLS, with --key; implies --tls (WAYMARK_CLIENT_CERT_FILE)' },
  key: { type: 'string', value: 'FILE', help: 'PEM private key of --cert (WAYMARK_CLIENT_KEY_FILE)' },
  'server-name': { type: 'string', value: 'NAME', help: "the name to verify the server's certificate against (WAYMARK_SERVER_NAME)" },
  output: { type: 'string', short: 'o', value: 'table|json', help: 'table for people (default), json for scripts: one object per line (WAYMARK_OUTPUT)' },
  timeout: { type: 'string', value: 'DURATION', help: 'deadline of each call, retries included, e.g. 30s (WAYMARK_TIMEOUT; default 10s); --wait and --follow are not bound by it' },
};


export interface Connection {
  address: string;
  client: ClientOptions;
  output: OutputMode;
  timeoutMs: number;
  /** Appended to a refused call's line: where the local key was looked for, when none was sent. */
  credentialsHint: string;
}

const ADDRESS = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):\d{1,5}$/;

export function connectionOf(values: Values, env: NodeJS.ProcessEnv): Connection {
  const pick = (flag: string, ...vars: string[]): string | undefined => {
    const v = values[flag];
    if (typeof v === 'string') return v;
    for (const name of vars) if (env[name]) return env[name];
    return undefined;
  };
  const address = pick('addr', 'WAYMARK_ADDR', 'WAYMARK_ADDRESS') ?? DEFAULT_ADDRESS;
  if (!ADDRESS.test(address)) throw new UsageError(`--addr must be host:port, e.g. ${DEFAULT_ADDRESS}; got "${address}"`);
  const output = pick('output', 'WAYMARK_OUTPUT') ?? 'table';
  if (output !== 'table' && output !== 'json') throw new UsageError(`--output must be table or json; got "${output}"`);
  const timeout = pick('timeout', 'WAYMARK_TIMEOUT') ?? '10s';
  const timeoutMs = parseDuration(timeout);
  if (timeoutMs === undefined || timeoutMs <= 0) throw new UsageError(`--timeout must be a duration such as 500ms, 10s or 2m; got "${timeout}"`);

  const files: TlsOptions = {};
  for (const [flag, variable, field] of [['ca', 'WAYMARK_CA_FILE', 'ca'], ['cert', 'WAYMARK_CLIENT_CERT_FILE', 'cert'], ['key', 'WAYMARK_CLIENT_KEY_FILE', 'key']] as const) {
    const file = pick(flag, variable);
    if (file !== undefined) files[field] = readPem(flag, file);
  }
  if ((files.cert === undefined) !== (files.key === undefined)) throw new UsageError('--cert and --key go together (a client certificate and its private key)');
  const serverName = pick('server-name', 'WAYMARK_SERVER_NAME');
  if (serverName !== undefined) files.serverName = serverName;
  const tlsWanted = values.tls === true || /^(1|true|yes)$/i.test(env.WAYMARK_TLS ?? '') || Object.keys(files).length > 0;
  const tls = !tlsWanted ? undefined : Object.keys(files).length > 0 ? files : true;

  const namespace = pick('namespace', 'WAYMARK_NAMESPACE');
  // No token for a server on this machine: `waymark dev`'s local admin key, if there is one.
  const given = pick('token', 'WAYMARK_TOKEN');
  const token = given ?? localToken({ address, dataDir: env.WAYMARK_DATA_DIR });
  // Where a refused call should send the operator: the local key is only read from one folder.
  // Not with a client certificate: the server may take it instead of a token (docs/security.md "mTLS").
  const credentialsHint = given === undefined && token === undefined && files.cert === undefined && isLoopbackAddress(address)
    ? `; no token was given and there is no local key at ${localKeyFile(env.WAYMARK_DATA_DIR)}: run this from the folder waymark dev runs in, or set WAYMARK_DATA_DIR to its data folder`
    : '';
  return {
    address,
    output,
    timeoutMs,
    credentialsHint,
    client: { address, tls, token, namespace, timeoutMs, retry: { budgetMs: timeoutMs } },
  };
}

function readPem(flag: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`--${flag} ${file}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}
