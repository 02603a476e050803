import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * Issue 30: an address that is taken is found before anything is started or written (no embedded
 * PostgreSQL in the data directory, no migrations, no local key), and a metrics port clash stops
 * the process with one line instead of a logged stack and a replica without metrics.
 */

let busy: Server;
let taken: string;
let dir: string;

beforeAll(async () => {
  busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  taken = `127.0.0.1:${(busy.address() as { port: number }).port}`;
  dir = mkdtempSync(path.join(tmpdir(), 'waymark-ports-'));
});

afterAll(async () => {
  await new Promise((resolve) => busy.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function refused(args: string[], env: Record<string, string>) {
  const dataDir = path.join(dir, `${args[0]}-${Object.keys(env).join('-')}`);
  const p = WaymarkProcess.start(args, { cwd: dir, env: { WAYMARK_DATA_DIR: dataDir, ...env } });
  const { code } = await p.exited;
  return { code, lines: p.stderr.trimEnd().split('\n'), logs: p.logs, dataDirWritten: existsSync(dataDir) };
}

describe('addresses that cannot be listened on', () => {
  it.each([
    ['dev', 'WAYMARK_ADDR'],
    ['dev', 'WAYMARK_METRICS_ADDR'],
    ['server', 'WAYMARK_HEALTH_ADDR'],
  ])('waymark %s with %s taken: one line naming it, exit 78, nothing started or written', async (command, setting) => {
    const r = await refused([command], { WAYMARK_ADDR: '127.0.0.1:0', [setting]: taken });
    expect(r.lines).toEqual([`waymark ${command}: ${taken} (${setting}) is already in use (another waymark on this machine?); stop that process, or set ${setting} to a free HOST:PORT (port 0 picks one). Nothing was started`]);
    expect(r.code).toBe(78);
    expect(r.dataDirWritten).toBe(false);
    expect(r.logs.some((l) => /PostgreSQL|migrat|key|listening/.test(String(l.msg)))).toBe(false);
  });

  it('waymark sweeper with its metrics port taken: one line, exit 78, before the database', async () => {
    // A database that does not exist: reaching for it would fail differently.
    const r = await refused(['sweeper'], { WAYMARK_METRICS_ADDR: taken, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(r.lines).toEqual([`waymark sweeper: ${taken} (WAYMARK_METRICS_ADDR) is already in use (another waymark on this machine?); stop that process, or set WAYMARK_METRICS_ADDR to a free HOST:PORT (port 0 picks one). Nothing was started`]);
    expect(r.code).toBe(78);
  });
});
