import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { setMaxListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Health } from '../../src/gen/grpc/health/v1/health_pb.js';
import { startTestServer, type TestServer } from './test-server.js';

/*
 * Every call in flight listens on the server's shutdown signals (Connect links each handler's
 * signal to them). More than ten at once is normal load, not a leak, and must not make Node print
 * "MaxListenersExceededWarning: Possible EventTarget memory leak detected" into the server's log.
 */
describe('many calls in flight at once', () => {
  let t: TestServer;
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);

  beforeAll(async () => {
    t = await startTestServer();
    process.on('warning', onWarning);
  });
  afterAll(async () => {
    process.off('warning', onWarning);
    await t.server.close(1000);
  });

  it('30 open Health.Watch streams raise no listener-leak warning', async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: `http://${t.server.address}` }));
    const abort = new AbortController();
    setMaxListeners(0, abort.signal); // the test's own client signal, shared by all 30: only the server is under test
    const streams = Array.from({ length: 30 }, () => health.watch({ service: '' }, { signal: abort.signal })[Symbol.asyncIterator]());
    // Each stream's first message means its handler is running, and listening, on the server.
    const first = await Promise.all(streams.map((s) => s.next()));
    expect(first.every((r) => !r.done)).toBe(true);
    await new Promise((resolve) => setImmediate(resolve)); // process.emitWarning delivers on the next tick
    abort.abort();
    await Promise.all(streams.map((s) => s.next().catch(() => undefined)));
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
  });
});
