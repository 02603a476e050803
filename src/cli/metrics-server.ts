import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';

export interface MetricsServer {
  /** host:port actually bound (port 0 picks a free one). */
  address: string;
  close(): Promise<void>;
}

/**
 * Plain HTTP/1.1 `GET /metrics` for Prometheus, on its own port so a scrape never competes with
 * gRPC. A port that cannot be bound stops the process with one line (issue 30): a replica that
 * silently serves no metrics is found only when a dashboard goes blank. The commands check the
 * port before they start anything (port-check.ts); this covers a port taken in between.
 */
export async function startMetricsServer(options: {
  host: string; port: number; metrics: Metrics; logger: Logger;
}): Promise<MetricsServer> {
  const { metrics, logger } = options;
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at GET /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (err: unknown) => {
        logger.warn({ err }, 'rendering metrics failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new Error(`the metrics address ${options.host}:${options.port} (WAYMARK_METRICS_ADDR) cannot be listened on (${code}); set WAYMARK_METRICS_ADDR to a free HOST:PORT`, { cause: err });
  }
  const { address, port } = server.address() as AddressInfo;
  const shown = address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
  logger.info({ metricsAddress: shown }, `metrics listening on http://${shown}/metrics`);
  return {
    address: shown,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
