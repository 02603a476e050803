import { Code, ConnectError, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createWaymarkClient, RunService, RunStatus, WaymarkError, type StreamRunEventsRequest } from '../src/index.js';

// A scripted stand-in for Waymark's StreamRunEvents: call i sends script[i].seqs, then ends with
// `end`, or stays open until the server goes away (`hang`). The live tests (live.test.ts) do the
// same against the real server.
interface Step {
  seqs: bigint[];
  end?: Code;
  hang?: boolean;
  final?: RunStatus;
}

class ScriptedServer {
  readonly afterSeqs: Array<bigint | undefined> = [];
  /** include_large_payloads of each call. */
  readonly largePayloads: boolean[] = [];
  private server: http2.Http2Server | undefined;
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  port = 0;

  constructor(private readonly script: Step[]) {}

  private routes = (router: ConnectRouter): void => {
    const script = this.script;
    const afterSeqs = this.afterSeqs;
    const largePayloads = this.largePayloads;
    router.service(RunService, {
      async *streamRunEvents(req: StreamRunEventsRequest, ctx: HandlerContext) {
        afterSeqs.push(req.afterSeq);
        largePayloads.push(req.includeLargePayloads);
        const step = script[afterSeqs.length - 1]!;
        for (const [i, seq] of step.seqs.entries()) {
          const final = i === step.seqs.length - 1 && step.final !== undefined;
          yield {
            event: {
              runId: req.runId,
              seq,
              body: final ? { case: 'statusChanged' as const, value: { status: step.final! } } : { case: 'entry' as const, value: { seq, kind: 'step' } },
            },
          };
        }
        if (step.hang) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        if (step.end !== undefined) throw new ConnectError('scripted end', step.end);
      },
    });
  };

  async start(): Promise<void> {
    const server = http2.createServer(connectNodeAdapter({ routes: this.routes }));
    server.on('session', (s) => {
      this.sessions.add(s);
      s.once('close', () => this.sessions.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** The server disappears with its connections, as a killed process would. */
  async kill(): Promise<void> {
    for (const s of this.sessions) s.destroy();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

const servers: ScriptedServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.kill().catch(() => {});
});

async function scripted(script: Step[]): Promise<ScriptedServer> {
  const server = new ScriptedServer(script);
  servers.push(server);
  await server.start();
  return server;
}

describe('events() reconnects', () => {
  it('after UNAVAILABLE and a dropped connection, resuming from the last seq and yielding each seq once', async () => {
    const server = await scripted([
      { seqs: [0n, 1n, 2n], end: Code.Unavailable },
      { seqs: [2n, 3n], hang: true },
      { seqs: [4n], final: RunStatus.SUCCEEDED },
    ]);
    const client = createWaymarkClient({ address: `127.0.0.1:${server.port}`, retry: { initialMs: 10, maxMs: 50 } });
    const seen: bigint[] = [];
    const reconnects: bigint[] = [];
    try {
      for await (const event of client.events('run-1', { followSuspended: true, onReconnect: ({ afterSeq }) => reconnects.push(afterSeq) })) {
        seen.push(event.seq);
        if (event.seq === 3n) {
          await server.kill();
          await server.start();
        }
      }
    } finally {
      client.close();
    }
    expect(seen).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(reconnects[0]).toBe(2n);
    expect(reconnects.at(-1)).toBe(3n);
    expect(server.afterSeqs[0]).toBeUndefined();
    expect(server.afterSeqs[1]).toBe(2n);
    expect(server.afterSeqs.at(-1)).toBe(3n);
    expect(server.largePayloads.every((v) => !v)).toBe(true);
  });

  it('sends includeLargePayloads on every connection of the stream, reconnects included', async () => {
    const server = await scripted([{ seqs: [0n, 1n], end: Code.Unavailable }, { seqs: [2n], final: RunStatus.SUCCEEDED }]);
    const client = createWaymarkClient({ address: `127.0.0.1:${server.port}`, retry: { initialMs: 10, maxMs: 50 } });
    const seen: bigint[] = [];
    try {
      for await (const event of client.events('run-1', { includeLargePayloads: true })) seen.push(event.seq);
    } finally {
      client.close();
    }
    expect(seen).toEqual([0n, 1n, 2n]);
    expect(server.largePayloads).toEqual([true, true]);
  });

  it('not after other errors, which end the loop typed', async () => {
    const server = await scripted([{ seqs: [], end: Code.NotFound }]);
    const client = createWaymarkClient({ address: `127.0.0.1:${server.port}` });
    const consume = async (): Promise<void> => {
      for await (const _ of client.events('run-x')) {
        // nothing arrives
      }
    };
    try {
      await expect(consume()).rejects.toSatisfy((e) => e instanceof WaymarkError && e.code === Code.NotFound);
    } finally {
      client.close();
    }
    expect(server.afterSeqs).toHaveLength(1);
  });
});
