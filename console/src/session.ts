import { createBrowserClients, type BrowserClients } from '@waymark-dev/client/browser';
import { CREDENTIAL_KEY } from './first-requests.js';

/*
 * Who is signed in: an API key (wmk_…) or a stream token (wms_…), kept in sessionStorage, so it
 * lives as long as the tab and is never sent anywhere but this origin's API (docs/console.md
 * "Signing in"). A stream token reads one run only; its run id is in the token's payload.
 */

const STORAGE = CREDENTIAL_KEY;

export interface Session {
  token: string;
  kind: 'key' | 'stream-token';
  /** The run a stream token is for. */
  runId?: string;
  /** When a stream token expires (ms since the epoch). */
  expiresAt?: number;
  clients: BrowserClients;
}

let current: Session | undefined;

export function session(): Session | undefined {
  if (current) return current;
  const saved = sessionStorage.getItem(STORAGE);
  if (saved) current = open(saved);
  return current;
}

/** Opens a session for `token`, or explains why it cannot be one. */
export function parseCredential(token: string): { ok: true; session: Session } | { ok: false; why: string } {
  const t = token.trim();
  if (t.startsWith('wmk_')) return { ok: true, session: open(t) };
  if (t.startsWith('wms_')) {
    const claims = streamTokenClaims(t);
    if (!claims) return { ok: false, why: 'This stream token is malformed.' };
    if (claims.exp <= Date.now()) return { ok: false, why: 'This stream token has expired: mint a new one (waymark runs token, CreateStreamToken).' };
    return { ok: true, session: open(t) };
  }
  return { ok: false, why: 'Paste an API key (starts with wmk_) or a stream token (starts with wms_).' };
}

export function signIn(s: Session): void {
  sessionStorage.setItem(STORAGE, s.token);
  current = s;
}

export function signOut(): void {
  sessionStorage.removeItem(STORAGE);
  current = undefined;
}

function open(token: string): Session {
  const clients = createBrowserClients({ token });
  if (token.startsWith('wms_')) {
    const claims = streamTokenClaims(token);
    return { token, kind: 'stream-token', clients, ...(claims ? { runId: claims.run, expiresAt: claims.exp } : {}) };
  }
  return { token, kind: 'key', clients };
}

/** The unverified claims of a stream token (`wms_<base64url JSON>.<signature>`): the server verifies it on every call. */
function streamTokenClaims(token: string): { run: string; exp: number } | undefined {
  const payload = /^wms_([A-Za-z0-9_-]+)\./.exec(token)?.[1];
  if (!payload) return undefined;
  try {
    const json = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as { run?: unknown; exp?: unknown };
    return typeof json.run === 'string' && typeof json.exp === 'number' ? { run: json.run, exp: json.exp } : undefined;
  } catch {
    return undefined;
  }
}
