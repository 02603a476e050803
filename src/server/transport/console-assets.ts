import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/*
 * The web console's static files (console/, built by Vite during `npm install`), served on the
 * API's own port under /console/ (docs/console.md). The page calls the RPCs on the same origin, so
 * no CORS is needed and the API key never leaves it.
 *
 * - The build is read into memory once at start (a few hundred kB), with an ETag and a gzip copy
 *   of each file; nothing touches the disk per request.
 * - Caching: Vite names what it bundles by content hash (/console/assets/*), so those are cached
 *   for a year as immutable; index.html and the SPA fallback are `no-cache` (revalidated by ETag),
 *   so a new build is picked up on the next load.
 * - Security headers on every answer: a CSP allowing only this origin's scripts, styles and calls
 *   (no inline script, no eval, no framing), nosniff, no referrer.
 * - SPA fallback: any other GET under /console/ answers index.html, so a deep link (a run's page)
 *   loads; a missing hashed asset is a 404, not HTML that a script tag would choke on.
 */

export const CONSOLE_PATH = '/console/';

export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
    "font-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json', '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2', '.map': 'application/json',
};

interface Asset {
  body: Buffer;
  gzip: Buffer | undefined;
  type: string;
  etag: string;
  immutable: boolean;
}

/** What the HTTP/2 compatibility API and node:http have in common, as far as serving a file goes. */
export interface AssetRequest {
  method?: string | undefined;
  url?: string | undefined;
  headers: IncomingHttpHeaders;
}
export interface AssetResponse {
  writeHead(status: number, headers: OutgoingHttpHeaders): unknown;
  end(): unknown;
  end(body: Buffer): unknown;
}

export interface ConsoleAssets {
  /** Answers `req` when it is the console's (GET/HEAD of / or under /console/); false leaves it to the API. */
  handle(req: AssetRequest, res: AssetResponse): boolean;
  /** Whether a build was found (false: /console/ explains how to build it). */
  readonly built: boolean;
}

/** Reads the built console in `dir` (console/dist); a missing build still answers /console/, with how to build it. */
export function loadConsoleAssets(dir: string): ConsoleAssets {
  const files = new Map<string, Asset>();
  const built = existsSync(path.join(dir, 'index.html'));
  if (built) for (const file of walk(dir)) files.set(path.relative(dir, file).split(path.sep).join('/'), asset(file));
  const index = files.get('index.html');

  return {
    built,
    handle(req, res) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return false;
      const url = req.url ?? '/';
      const pathname = url.split('?', 1)[0]!;
      if (pathname === '/' || pathname === '/console') {
        res.writeHead(302, { ...CONSOLE_HEADERS, location: CONSOLE_PATH, 'cache-control': 'no-cache' });
        res.end();
        return true;
      }
      if (!pathname.startsWith(CONSOLE_PATH)) return false;
      if (!index) {
        send(req, res, 503, text('The web console is not built: run `npm run build:console` (npm install does it), then reload.'));
        return true;
      }
      let name: string;
      try {
        name = decodeURIComponent(pathname.slice(CONSOLE_PATH.length));
      } catch {
        send(req, res, 400, text('bad path'));
        return true;
      }
      const found = files.get(name);
      if (found) send(req, res, 200, found);
      else if (name.startsWith('assets/') || path.extname(name) !== '') send(req, res, 404, text('not found'));
      else send(req, res, 200, index);
      return true;
    },
  };
}

function send(req: AssetRequest, res: AssetResponse, status: number, a: Asset): void {
  const headers: OutgoingHttpHeaders = {
    ...CONSOLE_HEADERS,
    'content-type': a.type,
    'cache-control': a.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    etag: a.etag,
    vary: 'accept-encoding',
  };
  if (status === 200 && req.headers['if-none-match'] === a.etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  const gzip = a.gzip && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = gzip ? a.gzip! : a.body;
  if (gzip) headers['content-encoding'] = 'gzip';
  headers['content-length'] = body.byteLength;
  res.writeHead(status, headers);
  if (req.method === 'HEAD') res.end();
  else res.end(body);
}

function asset(file: string): Asset {
  const body = readFileSync(file);
  const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
  const compressible = /^(text\/|application\/json|image\/svg)/.test(type) && body.byteLength > 512;
  return {
    body,
    gzip: compressible ? gzipSync(body) : undefined,
    type,
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    immutable: file.includes(`${path.sep}assets${path.sep}`),
  };
}

function text(message: string): Asset {
  const body = Buffer.from(`${message}\n`);
  return { body, gzip: undefined, type: 'text/plain; charset=utf-8', etag: '"static"', immutable: false };
}

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) yield* walk(file);
    else yield file;
  }
}
