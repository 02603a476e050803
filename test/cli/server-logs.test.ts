import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createWaymarkClient } from '../../clients/ts/src/index.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * The server's logs: one readable line per event on a terminal (a pseudo-terminal here,
 * test/support/pty-run.py), JSON lines on a pipe, as a log collector reads them.
 */

const PTY = path.resolve('test/support/pty-run.py');
const python = spawnSync('python3', ['-c', 'import pty, termios'], { stdio: 'ignore' }).status === 0;
// eslint-disable-next-line no-control-regex -- the escape codes a terminal gets
const SGR = /\x1b\[\d+(;\d+)*m/g;
const dir = mkdtempSync(path.join(tmpdir(), 'waymark-logs-'));
const env = { DATABASE_URL: 'memory:', WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_METRICS_ADDR: '127.0.0.1:0', WAYMARK_DATA_DIR: path.join(dir, '.waymark') };

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('waymark dev logs', () => {
  it.skipIf(!python)('on a terminal: readable lines (time, level, message), no JSON', async () => {
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    delete childEnv.WAYMARK_LOG_FORMAT;
    const child = spawn('python3', [PTY, process.execPath, path.resolve('bin/waymark.js'), 'dev'], { cwd: dir, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      // Ctrl-C once it listens: the terminal's interrupt stops it as a person would.
      if (text.includes('waymark dev listening on ') && !child.stdin.writableEnded) child.stdin.end('\x03');
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const lines = text.replace(SGR, '').split(/\r?\n/).filter((l) => l.trim() !== '');
    expect(lines.find((l) => l.includes('waymark dev listening on'))).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: waymark dev listening on 127\.0\.0\.1:\d+ /);
    expect(lines.filter((l) => l.trimStart().startsWith('{'))).toEqual([]);
    expect(code).toBe(0);
  });

  it('records what it serves before it logs "listening": a run started the moment that line appears is accepted', async () => {
    const p = WaymarkProcess.start(['dev'], { cwd: dir, env });
    try {
      const address = await p.listening();
      const client = createWaymarkClient({ address });
      const { run } = await client.startRun('refund', { order: 'A-1', amount: 1 }, { idempotencyKey: 'at-once' });
      expect(run.workflowName).toBe('refund');
      const at = (prefix: string) => p.logs.findIndex((l) => typeof l.msg === 'string' && l.msg.startsWith(prefix));
      expect(at('replica registered')).toBeGreaterThanOrEqual(0);
      expect(at('replica registered')).toBeLessThan(at('waymark dev listening on'));
    } finally {
      await p.stop();
    }
  });

  it('on a pipe: JSON lines', async () => {
    const p = WaymarkProcess.start(['dev'], { cwd: dir, env });
    await p.listening();
    await p.stop();
    expect(p.logs.length).toBeGreaterThan(3);
    // WaymarkProcess keeps a line it could not parse as JSON as { msg } alone.
    expect(p.logs.every((l) => typeof l.level === 'string' && typeof l.time === 'string')).toBe(true);
  });
});
