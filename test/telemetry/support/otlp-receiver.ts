import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/*
 * A tiny OTLP/HTTP trace receiver in the test process: what a collector would get from a
 * `waymark server` started with OTEL_EXPORTER_OTLP_ENDPOINT pointing here. It decodes the JSON
 * encoding (the exporter's default) into flat spans; anything else is answered 415 so a test sees it.
 */

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, string | number | boolean>;
  status: number;
  /** The spans this one links to: trace and span ids. */
  links: { traceId: string; spanId: string }[];
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type OtlpAttribute = { key: string; value: OtlpValue };

function value(v: OtlpValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  return v.boolValue ?? '';
}

const attributes = (list: OtlpAttribute[] = []) => Object.fromEntries(list.map((a) => [a.key, value(a.value)]));

export class OtlpReceiver {
  private constructor(private readonly server: Server, readonly url: string, readonly spans: ReceivedSpan[]) {}

  static async start(): Promise<OtlpReceiver> {
    const spans: ReceivedSpan[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url !== '/v1/traces' || !String(req.headers['content-type']).includes('json')) {
          res.writeHead(415).end();
          return;
        }
        accept(spans, JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function accept(spans: ReceivedSpan[], body: { resourceSpans?: Array<{ resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }> }> }): void {
  for (const rs of body.resourceSpans ?? []) {
    const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        spans.push({
          traceId: String(s.traceId), spanId: String(s.spanId), parentSpanId: String(s.parentSpanId ?? ''),
          name: String(s.name), kind: Number(s.kind), service,
          attributes: attributes(s.attributes as OtlpAttribute[]),
          status: Number((s.status as { code?: number } | undefined)?.code ?? 0),
          links: ((s.links as { traceId: string; spanId: string }[] | undefined) ?? []).map((l) => ({ traceId: String(l.traceId), spanId: String(l.spanId) })),
        });
      }
    }
  }
}
