import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { WaymarkProcess } from './waymark-process.js';

/** The workflows module the client tests run (examples/refund.ts, drift_probe). */
export const CLIENT_WORKFLOWS = path.resolve('test/clients/workflows.ts');

/**
 * A `waymark server` on one address that a test can restart: kill it (SIGTERM drains, SIGKILL is
 * a crash) and start a new process on the same port, so clients see their streams drop and must
 * reconnect by themselves. `bumpDrift` restarts it with the next WAYMARK_TEST_DRIFT_VERSION, so
 * runs of drift_probe parked before the restart have drifted.
 */
export class RestartableServer {
  private process: WaymarkProcess | undefined;
  private driftVersion = 1;
  private queue: Promise<unknown> = Promise.resolve();
  address = '';
  restarts = 0;

  /** `workflows`: the module the server loads (default CLIENT_WORKFLOWS). */
  constructor(private readonly env: Record<string, string>, private readonly workflows = CLIENT_WORKFLOWS) {}

  async start(): Promise<string> {
    this.process = this.spawn('127.0.0.1:0');
    this.address = await this.process.listening();
    return this.address;
  }

  /**
   * Restarts on the same address; concurrent calls run one after another. `onStopped` is called
   * once the old process has exited, before the new one starts (the window a rollout opens).
   */
  restart(options: { signal?: NodeJS.Signals; bumpDrift?: boolean; onStopped?: () => void } = {}): Promise<void> {
    const next = this.queue.then(async () => {
      await this.process?.stop(options.signal ?? 'SIGTERM');
      options.onStopped?.();
      if (options.bumpDrift) this.driftVersion += 1;
      this.process = this.spawn(this.address);
      await this.process.listening();
      this.restarts += 1;
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  async stop(): Promise<void> {
    await this.queue;
    await this.process?.stop();
  }

  /** The last lines the current process logged and wrote to stderr, for a failing test's message. */
  tail(): string {
    const p = this.process;
    if (!p) return '';
    return [...p.logs.slice(-20).map((l) => JSON.stringify(l)), p.stderr.slice(-2000)].join('\n');
  }

  private spawn(addr: string): WaymarkProcess {
    return WaymarkProcess.start(['server', '--workflows', this.workflows], {
      env: {
        ...this.env,
        WAYMARK_ADDR: addr,
        WAYMARK_METRICS_ADDR: '127.0.0.1:0',
        WAYMARK_TEST_DRIFT_VERSION: String(this.driftVersion),
      },
    });
  }
}

/**
 * An HTTP endpoint through which a client test in another process asks for a restart:
 * `POST /restart?signal=SIGKILL` (default SIGTERM) or `POST /restart?drift=bump`. It answers 200
 * once the new server is listening, so the client waits on the response rather than on a timer.
 *
 * With a second replica (same database, its own address), `POST /rolling-restart` restarts
 * `server` and then `replica`, one after the other as a rollout does; it answers as soon as
 * `server` has stopped, so the client acts while that replica is down, and `POST /rolling-restart/wait`
 * answers once the rollout is over.
 */
export async function startRestartControl(server: RestartableServer, replica?: RestartableServer): Promise<{ url: string; close(): Promise<void> }> {
  let rollout: Promise<void> = Promise.resolve();
  const http: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://control');
    const signal = url.searchParams.get('signal') === 'SIGKILL' ? 'SIGKILL' : 'SIGTERM';
    const failed = (err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err));
    };
    if (req.method === 'POST' && replica && url.pathname === '/rolling-restart') {
      rollout = rollout.catch(() => undefined).then(() => server.restart({ signal, onStopped: () => res.writeHead(200).end(server.address) }))
        .then(() => replica.restart({ signal }));
      rollout.catch(failed);
      return;
    }
    if (req.method === 'POST' && replica && url.pathname === '/rolling-restart/wait') {
      rollout.then(() => res.writeHead(200).end(), failed);
      return;
    }
    if (req.method !== 'POST' || url.pathname !== '/restart') {
      res.writeHead(404).end();
      return;
    }
    // A drift bump restarts the replica too, so that no replica executes runs with the old definition.
    const bumpDrift = url.searchParams.get('drift') === 'bump';
    Promise.all([server.restart({ signal, bumpDrift }), bumpDrift ? replica?.restart({ signal, bumpDrift }) : undefined]).then(
      () => res.writeHead(200, { 'content-type': 'text/plain' }).end(server.address),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err)),
    );
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/restart`,
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  };
}

/**
 * Stands in for the payment provider of examples/refund.ts (WAYMARK_EXAMPLE_SINK_URL): counts the
 * refunds charged per order, outside the server process, so a test can prove each ran once.
 * `keys` has the distinct Idempotency-Key headers per order: a provider refunds once per key, so
 * a redispatch after a crash (a second charge with the same key) is still one refund. `hold(order)`
 * leaves the next charge of that order unanswered and resolves when it arrives, so a test can kill
 * the server while the tool is in flight; `close()` ends held requests.
 */
export async function startChargeSink(): Promise<{
  url: string; charges: Map<string, number>; keys: Map<string, Set<string>>; hold(order: string): Promise<void>; close(): Promise<void>;
}> {
  const charges = new Map<string, number>();
  const keys = new Map<string, Set<string>>();
  const holds = new Map<string, () => void>();
  const held: ServerResponse[] = [];
  const http: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      const { order } = JSON.parse(body) as { order: string };
      charges.set(order, (charges.get(order) ?? 0) + 1);
      const key = req.headers['idempotency-key'];
      if (typeof key === 'string') keys.set(order, new Set([...(keys.get(order) ?? []), key]));
      const arrived = holds.get(order);
      if (arrived) {
        holds.delete(order);
        held.push(res);
        arrived();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/charges`,
    charges,
    keys,
    hold: (order) => new Promise<void>((resolve) => holds.set(order, resolve)),
    close: () => {
      for (const res of held) res.destroy();
      return new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/**
 * The first RPC of RunService and SignalService that the server at `address` answers
 * UNIMPLEMENTED (e.g. "waymark.v1.RunService/StartRun"), or undefined when it serves them all.
 * Each is called with an empty request, which a served RPC refuses as invalid without writing.
 */
export async function unservedRpc(address: string): Promise<string | undefined> {
  const transport = createGrpcTransport({ baseUrl: `http://${address}` });
  for (const service of [RunService, SignalService] as DescService[]) {
    const client = createClient(service, transport) as unknown as Record<string, (req: object) => unknown>;
    for (const method of service.methods) {
      try {
        const call = client[method.localName]!({});
        if (method.methodKind === 'server_streaming') {
          for await (const _ of call as AsyncIterable<unknown>) break;
        } else {
          await call;
        }
      } catch (err) {
        if (ConnectError.from(err).code === Code.Unimplemented) return `${service.typeName}/${method.name}`;
      }
    }
  }
  return undefined;
}
