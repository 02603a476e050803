import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/*
 * The client scenarios of @modelcontextprotocol/conformance that apply to Waymark's MCP client
 * (docs/mcp.md "Conformance"), run by the package's own runner: it starts each scenario's MCP
 * server, runs test/mcp/conformance/waymark-client.ts (SdkMcpConnector, what replicas call servers
 * through) against it as a process, and records its checks. Every check must be SUCCESS.
 * `sse-retry` passes too but judges reconnect timing (±50/200 ms), so it is run by hand, not here;
 * elicitation and OAuth scenarios do not apply (a registration carries static headers, and a run
 * cannot answer a server's elicitation mid-call).
 */

const run = promisify(execFile);
const RUNNER = path.resolve('node_modules/@modelcontextprotocol/conformance/dist/index.js');
const SHIM = path.resolve('test/mcp/conformance/node20-shim.mjs');
const CLIENT = `${process.execPath} --import tsx ${path.resolve('test/mcp/conformance/waymark-client.ts')}`;
const dirs: string[] = [];

afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('MCP conformance: client scenarios', () => {
  it.each(['initialize', 'tools_call'])('%s: every check of the scenario passes', async (scenario) => {
    const out = await mkdtemp(path.join(tmpdir(), 'waymark-mcp-conformance-'));
    dirs.push(out);
    await run(process.execPath, ['--import', SHIM, RUNNER, 'client', '--command', CLIENT, '--scenario', scenario, '-o', out, '--timeout', '60000'], { timeout: 120_000 });
    const [result] = await readdir(out);
    const checks = JSON.parse(await readFile(path.join(out, result!, 'checks.json'), 'utf8')) as { id: string; status: string }[];
    const verdicts = checks.filter((c) => c.status !== 'INFO');
    expect(verdicts.length).toBeGreaterThan(0);
    expect(verdicts.filter((c) => c.status !== 'SUCCESS')).toEqual([]);
  }, 150_000);
});
