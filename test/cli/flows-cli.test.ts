import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { jsonLines, runCli, startOperatorServer, type CliResult } from './operator-harness.js';

/*
 * `waymark flows register|get|list` (src/cli/client/flows-commands.ts) as the CLI in a subprocess
 * against a real server: a flow from YAML and from JSON, both output modes, an invalid flow refused
 * with its field path and nothing stored, a file that is neither JSON nor YAML.
 */

let db: MigratedDatabase;
let server: WaymarkProcess;
let address: string;
let scratch: string;

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { address });

const FLOW = {
  name: 'greet-flow',
  description: 'Echoes a greeting.',
  stateSchema: { type: 'object', properties: { who: { type: 'string' }, echoed: {} }, required: ['who'] },
  start: 'say',
  nodes: [
    { id: 'say', tool: { tool: 'echo', arguments: { text: 'hello {{ state.who }}' }, into: 'echoed' } },
    { id: 'done', end: { output: '{{ state.echoed }}' } },
  ],
  edges: [{ from: 'say', to: 'done' }],
};

function file(name: string, text: string): string {
  const at = path.join(scratch, name);
  writeFileSync(at, text);
  return at;
}

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_flows_cli');
  ({ server, address } = await startOperatorServer(db));
  scratch = mkdtempSync(path.join(os.tmpdir(), 'waymark-flows-cli-'));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('waymark flows', () => {
  it('registers from YAML, is a no-op for the same content, takes JSON, gets and lists; the flow runs', async () => {
    const yamlFile = file('greet.yaml', toYaml(FLOW));
    const first = await cli('flows', 'register', yamlFile);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^flow greet-flow registered as version 1 \(digest [0-9a-f]{12}\)/);
    const again = await cli('flows', 'register', yamlFile);
    expect(again.stdout).toMatch(/^flow greet-flow unchanged: version 1 has this content/);

    const jsonFile = file('greet.json', JSON.stringify({ ...FLOW, description: 'Echoes a greeting, v2.' }));
    const second = await cli('flows', 'register', jsonFile, '-o', 'json');
    expect(second.code, second.stderr).toBe(0);
    expect(jsonLines(second.stdout)[0]).toMatchObject({ created: true, flow: { version: '2', flow: { name: 'greet-flow' } } });

    const got = await cli('flows', 'get', 'greet-flow', '--version', '1');
    expect(got.stdout).toMatch(/^flow greet-flow version 1 {2}digest [0-9a-f]{64}/);
    expect(got.stdout).toContain('"description": "Echoes a greeting."');
    const listed = jsonLines((await cli('flows', 'list', '-o', 'json')).stdout);
    expect(listed.map((f) => [(f.flow as { name: string }).name, f.version])).toEqual([['greet-flow', '2']]);
    expect((await cli('flows', 'list')).stdout).toMatch(/NAME\s+VERSION\s+DIGEST\s+NODES\s+DESCRIPTION\ngreet-flow\s+2\s+[0-9a-f]{12}\s+2\s+Echoes a greeting, v2\./);

    const run = await cli('runs', 'start', 'greet-flow', '--input', '{"who":"ada"}', '--wait', '-o', 'json');
    expect(run.code, run.stderr).toBe(0);
    expect(jsonLines(run.stdout)[0]).toMatchObject({ run: { status: 'RUN_STATUS_SUCCEEDED', output: { text: 'hello ada' }, workflowVersion: '2' } });
  });

  it('refuses an invalid flow with its field path (exit 2) and stores nothing; a file that is no flow is one line', async () => {
    const bad = file('bad.yaml', toYaml({ ...FLOW, name: 'bad-flow', nodes: [{ ...FLOW.nodes[0], tool: { tool: 'no_such_tool' } }, FLOW.nodes[1]] }));
    const refused = await cli('flows', 'register', bad);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('flow.nodes[0].tool.tool');
    expect((await cli('flows', 'get', 'bad-flow')).code).not.toBe(0);

    const notYaml = await cli('flows', 'register', file('junk.yaml', 'name: [unclosed'));
    expect(notYaml.code).toBe(2);
    expect(notYaml.stderr.trim().split('\n')).toHaveLength(1);
    expect(notYaml.stderr).toContain('is neither JSON nor YAML');
    const notFlow = await cli('flows', 'register', file('other.json', '{"name":"x","colour":"red"}'));
    expect(notFlow.code).toBe(2);
    expect(notFlow.stderr).toContain('is not a flow');
  });
});
