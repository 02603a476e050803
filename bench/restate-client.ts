// A separate client process for the Restate rows: `node --import tsx bench/restate-client.ts
// <ingress port> <runs> <concurrency>` invokes `bench/tenSteps` through Restate's HTTP ingress
// (request-response: the call returns when the invocation ended) over one HTTP/2 connection, as
// bench/grpc-client.ts does for Waymark, and prints one JSON line.
import http2 from 'node:http2';
import { percentile, pool } from './stats.js';

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
const latencies: number[] = [];
const cpuBefore = process.cpuUsage();
const started = performance.now();
await pool(runs, concurrency, async (i) => {
  const t = performance.now();
  await invoke(i);
  latencies.push(performance.now() - t);
});
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
session.close();
process.stdout.write(`${JSON.stringify({ runsPerSec: runs / seconds, runP50Ms: percentile(latencies, 50), runP99Ms: percentile(latencies, 99), cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
