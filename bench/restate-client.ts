// A separate client process for the Restate rows: `node --import tsx bench/restate-client.ts
// <ingress port> <runs> <concurrency>` invokes `bench/tenSteps` through Restate's HTTP ingress
// (request-response: the call returns when the invocation ended) over one HTTP/2 connection, as
// bench/grpc-client.ts does for Waymark, and prints one JSON line.
import http2 from 'node:http2';
import { timedCalls } from './stats.js';

const [portArg, runsArg, concurrencyArg] = process.argv.slice(2);
const runs = Number(runsArg);
const concurrency = Number(concurrencyArg);
const session = http2.connect(`http://127.0.0.1:${portArg}`);

const invoke = (n: number) => new Promise<void>((resolve, reject) => {
  const req = session.request({ ':method': 'POST', ':path': '/bench/tenSteps', 'content-type': 'application/json' });
  let status = 0;
  let body = '';
  req.setEncoding('utf8');
  req.on('response', (headers) => { status = Number(headers[':status']); });
  req.on('data', (chunk: string) => { body += chunk; });
  req.on('error', reject);
  req.on('end', () => {
    const expected = Array.from({ length: 10 }, (_, i) => n + i).reduce((a, b) => a + b, 0);
    if (status !== 200 || (JSON.parse(body) as { total?: number }).total !== expected) reject(new Error(`restate invocation: ${status} ${body}`));
    else resolve();
  });
  req.end(JSON.stringify({ n }));
});

await invoke(-1); // warm the connection and the endpoint
const figures = await timedCalls(runs, concurrency, invoke);
session.close();
process.stdout.write(`${JSON.stringify(figures)}\n`);
