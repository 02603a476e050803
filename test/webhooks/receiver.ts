import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/*
 * A webhook receiver for tests on 127.0.0.1: it verifies every request with the standardwebhooks
 * package (the Standard Webhooks reference implementation, not our signing code), counts attempts
 * per webhook-id, and answers as `answer` says: a status, or 'hang' (no answer: the connection is
 * dropped when the receiver closes).
 */

export interface Received {
  id: string;
  attempt: number;
  verified: boolean;
  body: { type: string; timestamp: string; data: Record<string, unknown> } | null;
  headers: http.IncomingHttpHeaders;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Webhook ids answered 2xx, in order. */
  accepted: string[];
  /** Set once the endpoint is registered. */
  secrets: string[];
  close(): Promise<void>;
}

export async function startReceiver(answer: (r: Received) => number | 'hang'): Promise<Receiver> {
  const received: Received[] = [];
  const accepted: string[] = [];
  const attempts = new Map<string, number>();
  const hanging = new Set<http.ServerResponse>();
  const receiver: Receiver = { url: '', received, accepted, secrets: [], close: async () => undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      // Verified when any of the endpoint's secrets verifies it (one during a rotation's overlap).
      let parsed: Received['body'] = null;
      for (const secret of receiver.secrets) {
        try {
          parsed = new Webhook(secret).verify(body, req.headers as Record<string, string>) as Received['body'];
          break;
        } catch {
          // try the next secret
        }
      }
      const r: Received = { id, attempt, verified: parsed !== null, body: parsed, headers: req.headers };
      received.push(r);
      const status = r.verified ? answer(r) : 400;
      if (status === 'hang') {
        hanging.add(res);
        return;
      }
      if (status >= 200 && status < 300) accepted.push(id);
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/waymark`;
  receiver.close = () => new Promise<void>((resolve) => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return receiver;
}
