/*
 * A run page's first two requests (GetRun and the journal's first page), sent while the rest of
 * the bundle is still being evaluated: this module has no imports and main.ts imports it first, so
 * it runs before the generated schemas are built (the largest part of the bundle's start-up). On a
 * slow or loaded machine that overlaps the round trip with the start-up instead of following it
 * (docs/console.md "Performance"). The calls are the Connect protocol's JSON form of the same
 * RPCs, through the same authentication; RunData decodes the answers with the generated schemas.
 * Anything but a 200 is dropped, and RunData makes the call again through the client, which
 * reports the error as every other call does.
 */

/** Entries in the journal's first page: what the run page's first screen is drawn from. */
export const FIRST_PAGE = 100;

/** Where the signed-in credential is kept (session.ts). */
export const CREDENTIAL_KEY = 'waymark.console.credential';

export interface FirstRequests {
  runId: string;
  run: Promise<unknown>;
  journal: Promise<unknown>;
}

let pending: FirstRequests | undefined = start();

/** The first requests for `runId`, once (a later visit to the page asks again). */
export function takeFirstRequests(runId: string): FirstRequests | undefined {
  const p = pending;
  pending = undefined;
  return p?.runId === runId ? p : undefined;
}

function start(): FirstRequests | undefined {
  const id = /^\/console\/runs\/([^/]+)\/?$/.exec(location.pathname)?.[1];
  const token = sessionStorage.getItem(CREDENTIAL_KEY);
  // A stream token's page reads the journal from the stream (run-data.ts); only an API key's reads pages.
  if (!id || !token?.startsWith('wmk_')) return undefined;
  const runId = decodeURIComponent(id);
  const call = (method: string, body: object): Promise<unknown> => fetch(`/waymark.v1.RunService/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'connect-protocol-version': '1', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  }).then((r) => (r.ok ? r.json() as Promise<unknown> : undefined), () => undefined);
  return { runId, run: call('GetRun', { runId }), journal: call('GetJournal', { runId, pageSize: FIRST_PAGE }) };
}
