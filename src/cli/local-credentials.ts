import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { SCOPES, type ApiKeys } from '../engine/index.js';
import { LOCAL_KEY_FILE } from './client/local-token.js';

/*
 * `waymark dev`'s local credentials, kept in the data directory next to the embedded PostgreSQL
 * (docs/security.md "Local development"): an admin key (every namespace, every scope) created on
 * the first start, and the stream-token secret when WAYMARK_STREAM_TOKEN_SECRET is unset. Both
 * files are mode 0600. The key file holds the secret (one line), so local tools can read it:
 * `localToken` (client/local-token.ts) is what the CLI calls when it talks to a loopback address
 * without a token.
 */

export const STREAM_SECRET_FILE = 'stream-token-secret';

async function writeSecretFile(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${text}\n`, { mode: 0o600 });
  // The mode applies only when the file is created; an older file with looser bits is tightened.
  await chmod(file, 0o600);
}

async function readSecretFile(file: string): Promise<string | null> {
  try {
    return (await readFile(file, 'utf8')).trim() || null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * The local admin key: the one in `<dataDir>/local-admin-key` while it is still an active key of
 * this store; otherwise a new one, written there. Logs where it is and how to use it, never the key.
 */
export async function ensureLocalAdminKey(options: { dataDir: string; keys: ApiKeys; logger: Logger }): Promise<{ file: string; keyId: string; created: boolean }> {
  const file = path.resolve(options.dataDir, LOCAL_KEY_FILE);
  const existing = await readSecretFile(file);
  if (existing) {
    const v = await options.keys.verify(existing);
    if (v.ok) {
      options.logger.info({ keyFile: file, keyId: v.key.id }, `local admin key in ${file}; use it with: export WAYMARK_TOKEN="$(cat ${file})"`);
      return { file, keyId: v.key.id, created: false };
    }
  }
  const { key, secret } = await options.keys.create({ name: 'waymark dev local admin key', namespace: null, scopes: [...SCOPES], createdByKeyId: null });
  await writeSecretFile(file, secret);
  options.logger.info(
    { keyFile: file, keyId: key.id },
    `created a local admin key in ${file} (mode 0600); send it as "authorization: Bearer <key>", e.g. export WAYMARK_TOKEN="$(cat ${file})"`,
  );
  return { file, keyId: key.id, created: true };
}

/** The stream-token secret of `waymark dev`: read from the data dir, or generated there once. */
export async function localStreamTokenSecret(dataDir: string): Promise<string> {
  const file = path.resolve(dataDir, STREAM_SECRET_FILE);
  const existing = await readSecretFile(file);
  if (existing) return existing;
  const secret = randomBytes(32).toString('base64url');
  await writeSecretFile(file, secret);
  return secret;
}
