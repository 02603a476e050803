// A separate client process for the gRPC benchmark: `node --import tsx bench/grpc-client.ts
// <address> <runs> <concurrency> [raw|connect]` runs StartRun with wait for each run and prints one
// JSON line.
//
// `raw` (the default) speaks the gRPC protocol over one `node:http2` session with the generated
// protobuf schemas: the lightest client, like bench/restate-client.ts for Restate, so both peers'
// rows pay the same small client on the 2 shared cores. `connect` is `@connectrpc/connect` with
// its gRPC transport (what the TypeScript client builds on), which costs about 1.5 ms more CPU per
// call (docs/performance.md, goal 1).
import http2 from 'node:http2';
import { create, fromBinary, fromJson, toBinary } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { RunStatus } from '../src/gen/waymark/v1/run_pb.js';
import { RunService, StartRunRequestSchema, StartRunResponseSchema, type StartRunResponse } from '../src/gen/waymark/v1/run_service_pb.js';
import { timedCalls } from './stats.js';

const [address, runsArg, concurrencyArg, mode = 'raw'] = process.argv.slice(2);
const runs = Number(runsArg);
const concurrency = Number(concurrencyArg);
const request = (n: number) => create(StartRunRequestSchema, { namespace: 'bench', workflow: 'bench-ten-steps', input: fromJson(ValueSchema, { n }), wait: true });

/** One unary gRPC call: a length-prefixed request message, the response message, grpc-status from the trailers. */
function rawStartRun(session: http2.ClientHttp2Session) {
  return (n: number) => new Promise<StartRunResponse>((resolve, reject) => {
    const message = toBinary(StartRunRequestSchema, request(n));
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    const req = session.request({ ':method': 'POST', ':path': '/waymark.v1.RunService/StartRun', 'content-type': 'application/grpc', te: 'trailers' });
    const chunks: Buffer[] = [];
    let status: string | undefined;
    let detail = '';
    const read = (headers: http2.IncomingHttpHeaders) => {
      if (headers['grpc-status'] !== undefined) status = String(headers['grpc-status']);
      if (headers['grpc-message'] !== undefined) detail = decodeURIComponent(String(headers['grpc-message']));
    };
    req.on('response', read); // a trailers-only answer carries the status in its headers
    req.on('trailers', read);
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', reject);
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (status !== '0' || body.length < 5) reject(new Error(`StartRun: grpc-status ${status} ${detail}`));
      else resolve(fromBinary(StartRunResponseSchema, body.subarray(5, 5 + body.readUInt32BE(1))));
    });
    req.end(frame);
  });
}

let close = () => {};
let call: (n: number) => Promise<StartRunResponse>;
if (mode === 'connect') {
  const client = createClient(RunService, createGrpcTransport({ baseUrl: `http://${address}` }));
  call = (n) => client.startRun(request(n));
} else if (mode === 'raw') {
  const session = http2.connect(`http://${address}`);
  call = rawStartRun(session);
  close = () => session.close();
} else {
  throw new Error(`grpc-client: unknown client "${mode}" (raw or connect)`);
}

const startRun = async (n: number) => {
  const res = await call(n);
  if (res.run?.status !== RunStatus.SUCCEEDED) throw new Error(`bench run ended ${RunStatus[res.run?.status ?? 0]}`);
};

await startRun(-1); // warm the connection and the server's code paths
const figures = await timedCalls(runs, concurrency, startRun);
close();
process.stdout.write(`${JSON.stringify(figures)}\n`);
