import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in payment provider for the remote-tool refund tests, as a real one behaves: it counts
 * every delivery per Idempotency-Key, applies a refund once per key (a repeat of the key gets the
 * first answer and is not applied again) and counts the refunds applied per order. With `hold`,
 * the first delivery of each key is applied but left unanswered until `release()`, so the worker
 * that sent it is still holding its task when a test kills it.
 */
export interface RefundProvider {
  url: string;
  /** Deliveries per Idempotency-Key (every request, repeats included). */
  deliveries: Map<string, number>;
  /** Refunds applied per order (once per key). */
  applied: Map<string, number>;
  /** The keys seen per order. */
  keysOf(order: string): string[];
  /** Answers the held deliveries (and holds no more). */
  release(): void;
  close(): Promise<void>;
}

export async function startRefundProvider(options: { hold?: boolean } = {}): Promise<RefundProvider> {
  const deliveries = new Map<string, number>();
  const applied = new Map<string, number>();
  const keys = new Map<string, Set<string>>();
  let hold = options.hold ?? false;
  const held: ServerResponse[] = [];
  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      const key = String(req.headers['idempotency-key'] ?? '');
      const { order } = JSON.parse(body) as { order: string };
      const first = !deliveries.has(key);
      deliveries.set(key, (deliveries.get(key) ?? 0) + 1);
      if (!keys.has(order)) keys.set(order, new Set());
      keys.get(order)!.add(key);
      if (first) applied.set(order, (applied.get(order) ?? 0) + 1);
      if (first && hold) {
        held.push(res);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/refunds`,
    deliveries,
    applied,
    keysOf: (order) => [...(keys.get(order) ?? [])],
    release() {
      hold = false;
      for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    },
    close: () => new Promise<void>((resolve) => {
      for (const res of held.splice(0)) res.destroy();
      http.closeAllConnections();
      http.close(() => resolve());
    }),
  };
}
