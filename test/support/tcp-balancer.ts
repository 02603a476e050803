import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A layer-4 load balancer on loopback, as a Kubernetes Service is to its pods: each client
 * connection goes to the next backend in turn, and is closed at once when that backend refuses
 * it (a replica restarting) or when there is no backend at all (between a SIGKILL and the next
 * replica's start), so the client sees a failed connection and must retry by itself. `refused`
 * counts how many were closed that way.
 */
export class TcpBalancer {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private next = 0;
  refused = 0;
  address = '';

  constructor(private readonly backends: () => string[]) {}

  async start(): Promise<string> {
    const server = net.createServer((client) => this.forward(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.address;
  }

  private forward(client: net.Socket): void {
    const backends = this.backends();
    if (backends.length === 0) {
      this.refused += 1;
      client.destroy();
      return;
    }
    const target = backends[this.next++ % backends.length]!;
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
    const upstream = net.connect({ host, port });
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    }
    upstream.once('error', () => {
      this.refused += 1;
      client.destroy();
    });
    client.once('error', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.once('close', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
