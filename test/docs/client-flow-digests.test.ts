import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createWaymarkClient, type JsonValue, type WaymarkClient } from '../../clients/ts/src/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { codeBlocks } from '../support/markdown-blocks.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * The refund flow each client README shows (a Go YAML string, a TypeScript object, a Python dict)
 * registers on a live `waymark dev`, and the digest the README prints for it is the one the server
 * computes (issue 30: "digests shown in docs come from those runs"). The three are one flow in three
 * spellings (camelCase here, snake_case also accepted), so they have one digest: the second and
 * third registrations change nothing. Each is also the flow of the example program whose output the
 * README prints (the README shows that program's core). The programs around these flows are run by
 * test/clients/flow-clients.test.ts; the flow of docs/flows.md by test/docs/doc-examples.test.ts.
 */

const root = path.resolve('.');

/** The refund flow in a README's code block or an example program, parsed as its language would. */
function flowIn(where: string, code: string): JsonValue {
  const goYaml = /^const refundFlow = `\n([\s\S]*?)\n`/m.exec(code);
  if (goYaml) return parseYaml(goYaml[1]!) as JsonValue;
  // A TypeScript object literal or a Python dict of strings, lists and dicts: both read as
  // JavaScript (trailing commas included) once the declaration is cut off.
  const literal = /^(?:const refundFlow: JsonValue = |REFUND_FLOW(?:: dict\[str, Any\])? = )(\{[\s\S]*?\n\});?$/m.exec(code);
  expect(literal, `${where}: the refund flow's literal`).not.toBeNull();
  return new Function(`return (${literal![1]});`)() as JsonValue;
}

/** The flow a README shows, and the digest printed after it. */
async function readmeFlow(readme: string): Promise<{ flow: JsonValue; printed: string }> {
  const blocks = codeBlocks(await readFile(path.join(root, readme), 'utf8'));
  const at = blocks.findIndex((b) => /^(const refundFlow\b|REFUND_FLOW = )/m.test(b.code));
  expect(at, `${readme}: no refund flow found`).toBeGreaterThanOrEqual(0);
  const flow = flowIn(`${readme}:${blocks[at]!.line}`, blocks[at]!.code);
  const output = blocks.slice(at + 1).find((b) => b.lang === 'text');
  const printed = /^flow refund-flow version \d+ ([0-9a-f]{64}) /m.exec(output?.code ?? '');
  expect(printed, `${readme}: the output after the flow prints its digest`).not.toBeNull();
  return { flow, printed: printed![1]! };
}

/** Each README, and the example program whose output it prints ("Its core:" is that program's flow). */
const READMES = [
  { readme: 'clients/go/README.md', program: 'clients/go/examples/refund-flow/main.go' },
  { readme: 'clients/ts/README.md', program: 'clients/ts/examples/refund-flow.ts' },
  { readme: 'clients/python/README.md', program: 'clients/python/examples/refund_flow.py' },
];

let db: TestDatabase;
let dev: WaymarkProcess;
let dataDir: string;
let client: WaymarkClient;

beforeAll(async () => {
  db = await createTestDatabase('waymark_client_flow_digests');
  dataDir = await mkdtemp(path.join(tmpdir(), 'waymark-flow-digests-'));
  dev = WaymarkProcess.start(['dev'], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_DATA_DIR: dataDir } });
  client = createWaymarkClient({ address: await dev.listening() });
}, 120_000);

afterAll(async () => {
  client?.close();
  await dev?.stop('SIGTERM');
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('the refund flow of each client README', () => {
  it('is the flow of the example program whose output it prints', async () => {
    for (const { readme, program } of READMES) {
      const { flow } = await readmeFlow(readme);
      expect(flow, `${readme} shows ${program}'s flow`).toEqual(flowIn(program, await readFile(path.join(root, program), 'utf8')));
    }
  });

  it('registers, and its printed digest is the server\'s; the three spellings are one flow', { timeout: 120_000 }, async () => {
    const created: boolean[] = [];
    for (const { readme } of READMES) {
      const { flow, printed } = await readmeFlow(readme);
      const registered = await client.registerFlow(flow);
      expect(registered.flow.digest, `${readme}: the digest it prints`).toBe(printed);
      created.push(registered.created);
    }
    expect(created).toEqual([true, false, false]);
  });
});
