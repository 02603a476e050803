import type http2 from 'node:http2';
import { cors } from '@connectrpc/connect';

/*
 * CORS for browsers calling the API with gRPC-Web or Connect (WAYMARK_CORS_ORIGINS, docs/security.md
 * "Browsers"). A preflight (OPTIONS) from an allowed origin is answered 204 with the methods and
 * headers the protocols use plus `authorization`; one from any other origin is 403. Responses to an
 * allowed origin carry Access-Control-Allow-Origin and expose the status headers and trailers.
 * CORS is not access control: a request from another origin is still served (a browser just hides
 * the answer), and only the credential in `authorization`, which browsers never attach on their
 * own, decides what a call may do.
 */

const ALLOW_HEADERS = [...cors.allowedHeaders, 'Authorization'].join(', ');
const EXPOSE_HEADERS = cors.exposedHeaders.join(', ');
const MAX_AGE_SECONDS = '7200';

export interface CorsPolicy {
  /** Answers a preflight; true when the request was one (and is answered). */
  preflight(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): boolean;
  /** Adds the CORS headers of an allowed origin to the response of an actual call. */
  decorate(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void;
}

/** `origins`: exact origins (`https://app.example.com`), or `*` for any. */
export function corsPolicy(origins: readonly string[]): CorsPolicy {
  const any = origins.includes('*');
  const exact = new Set(origins);
  const allowed = (origin: string | undefined): origin is string => typeof origin === 'string' && (any || exact.has(origin));
  return {
    preflight(req, res) {
      if (req.method !== 'OPTIONS') return false;
      const origin = req.headers.origin;
      if (!allowed(origin)) {
        res.writeHead(403, { vary: 'Origin' });
        res.end();
        return true;
      }
      res.writeHead(204, {
        'access-control-allow-origin': origin, 'access-control-allow-methods': cors.allowedMethods.join(', '),
        'access-control-allow-headers': ALLOW_HEADERS, 'access-control-max-age': MAX_AGE_SECONDS, vary: 'Origin',
      });
      res.end();
      return true;
    },
    decorate(req, res) {
      const origin = req.headers.origin;
      if (!allowed(origin)) return;
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-expose-headers', EXPOSE_HEADERS);
      res.setHeader('vary', 'Origin');
    },
  };
}
