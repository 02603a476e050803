import { readFileSync } from 'node:fs';
import path from 'node:path';

/*
 * The credential of `waymark dev` for local tools (docs/security.md "Local development"): on its
 * first start it writes an admin key to `<WAYMARK_DATA_DIR>/local-admin-key` (mode 0600). A
 * client given no token that talks to this machine sends that key; anything else needs --token or
 * WAYMARK_TOKEN. Self-contained (no server module), so the operator commands can use it.
 */

export const LOCAL_KEY_FILE = 'local-admin-key';
/** Where `waymark dev` listens by default. */
export const LOCAL_DEFAULT_ADDRESS = '127.0.0.1:50051';

/** Whether `host` only accepts connections from this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\./.test(h);
}

/** Whether `address` (HOST:PORT, or a URL) is on this machine. */
export function isLoopbackAddress(address: string): boolean {
  return isLoopbackHost(address.replace(/^[a-z]+:\/\//, '').replace(/\/$/, '').replace(/:\d+$/, ''));
}

/** Where the local admin key is read from: `dataDir`, else WAYMARK_DATA_DIR, else `.waymark` in the working directory. */
export function localKeyFile(dataDir?: string): string {
  return path.resolve(dataDir || process.env.WAYMARK_DATA_DIR || '.waymark', LOCAL_KEY_FILE);
}

/**
 * The local admin key, when `address` (default 127.0.0.1:50051) is a loopback address and the key
 * file exists in `dataDir` (default WAYMARK_DATA_DIR, then `.waymark` in the working directory);
 * undefined otherwise.
 */
export function localToken(options: { address?: string | undefined; dataDir?: string | undefined } = {}): string | undefined {
  if (!isLoopbackAddress(options.address || LOCAL_DEFAULT_ADDRESS)) return undefined;
  try {
    return readFileSync(localKeyFile(options.dataDir), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
