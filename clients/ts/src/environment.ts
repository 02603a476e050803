import type { Transport } from '@connectrpc/connect';
import type { Http2SessionManager } from '@connectrpc/connect-node';
import { readFileSync } from 'node:fs';
import { DEFAULT_ADDRESS, type TlsOptions, type TokenSource } from './options.js';
import { createDefaultTransport } from './transport.js';

/*
 * How a client or worker in Node finds its server: what the code passes, else the environment
 * (as Temporal's clients read TEMPORAL_ADDRESS), else the defaults. The names are the CLI's, so
 * one shell set up for `waymark` serves the clients too (docs/clients.md "Configuration from the
 * environment"). Node-only (process.env, files): a browser entry point passes a transport instead.
 */

/** The environment variables the clients read, the same in Go, Python and TypeScript. */
export const ENVIRONMENT = {
  address: 'WAYMARK_ADDRESS',
  token: 'WAYMARK_TOKEN',
  namespace: 'WAYMARK_NAMESPACE',
  tls: 'WAYMARK_TLS',
  caFile: 'WAYMARK_CA_FILE',
  certFile: 'WAYMARK_CLIENT_CERT_FILE',
  keyFile: 'WAYMARK_CLIENT_KEY_FILE',
  serverName: 'WAYMARK_SERVER_NAME',
} as const;

export interface ConnectionOptions {
  address?: string | undefined;
  tls?: boolean | TlsOptions | undefined;
  token?: TokenSource | undefined;
  namespace?: string | undefined;
  transport?: Transport | undefined;
}

export interface Connection {
  transport: Transport;
  /** The connection to close, when the transport is the default one. */
  sessions: Http2SessionManager | undefined;
  /** The namespace of every call; '' is the server's default. */
  namespace: string;
}

export interface ConnectionSettings {
  address: string;
  tls: boolean | TlsOptions;
  /** '' for none. */
  token: TokenSource;
  namespace: string;
}

/** The options with each one the code left unset taken from `env`; empty values count as unset. */
export function settingsFromEnvironment(options: ConnectionOptions, env: Record<string, string | undefined> = process.env): ConnectionSettings {
  const read = (name: string): string | undefined => (env[name] ? env[name] : undefined);
  return {
    address: options.address || read(ENVIRONMENT.address) || DEFAULT_ADDRESS,
    token: options.token || read(ENVIRONMENT.token) || '',
    namespace: options.namespace ?? read(ENVIRONMENT.namespace) ?? '',
    tls: tlsFromEnvironment(options.tls, read),
  };
}

/**
 * `false` in code means plaintext whatever the environment says; `true` or an object in code is
 * completed by the environment's files for the fields it leaves out; unset, the environment
 * decides: any of the files, or WAYMARK_TLS=1, turns TLS on.
 */
function tlsFromEnvironment(given: boolean | TlsOptions | undefined, read: (name: string) => string | undefined): boolean | TlsOptions {
  if (given === false) return false;
  const files: TlsOptions = {};
  const ca = read(ENVIRONMENT.caFile);
  const cert = read(ENVIRONMENT.certFile);
  const key = read(ENVIRONMENT.keyFile);
  const serverName = read(ENVIRONMENT.serverName);
  if (ca !== undefined) files.ca = pemFile(ENVIRONMENT.caFile, ca);
  if (cert !== undefined) files.cert = pemFile(ENVIRONMENT.certFile, cert);
  if (key !== undefined) files.key = pemFile(ENVIRONMENT.keyFile, key);
  if (serverName !== undefined) files.serverName = serverName;
  const merged = { ...files, ...definedOnly(typeof given === 'object' ? given : {}) };
  if (typeof given === 'object' || Object.keys(merged).length > 0) return merged;
  return given === true || /^(1|true|yes)$/i.test(read(ENVIRONMENT.tls) ?? '');
}

function pemFile(variable: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${variable}=${file}: cannot read the PEM file (${(err as Error).message})`, { cause: err });
  }
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The transport and namespace of a client or worker built from `options`, then the environment. */
export function openConnection(options: ConnectionOptions, env: Record<string, string | undefined> = process.env): Connection {
  const settings = settingsFromEnvironment(options, env);
  if (options.transport) return { transport: options.transport, sessions: undefined, namespace: settings.namespace };
  const { transport, sessions } = createDefaultTransport({ address: settings.address, tls: settings.tls, token: settings.token || undefined });
  return { transport, sessions, namespace: settings.namespace };
}
