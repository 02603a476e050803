// The Restate service endpoint of the side-by-side benchmark, in its own process: `node --import tsx
// bench/restate-endpoint.ts` serves `bench` with a handler of ten `ctx.run` steps (the shape of
// bench/workflows.ts's `bench-ten-steps`) over HTTP/2 on loopback, and prints its port as one JSON line.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Context } from '@restatedev/restate-sdk';

// The SDK calls Promise.withResolvers, which Node 20 lacks (Node 22 has it): defined before the
// SDK is imported, and only when missing.
const promise = Promise as unknown as { withResolvers?: () => unknown };
promise.withResolvers ??= () => {
  let resolve!: (value: unknown) => void;
  let reject!: (reason?: unknown) => void;
  const p = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise: p, resolve, reject };
};
const restate = await import('@restatedev/restate-sdk');

const STEPS = 10;
const bench = restate.service({
  name: 'bench',
  handlers: {
    tenSteps: async (ctx: Context, input: { n: number }) => {
      let total = 0;
      for (let i = 0; i < STEPS; i++) total += await ctx.run(`step-${i}`, () => input.n + i);
      return { total };
    },
  },
});

const server = http2.createServer(restate.endpoint().bind(bench).http2Handler());
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
