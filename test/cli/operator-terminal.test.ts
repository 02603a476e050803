/* eslint-disable no-control-regex -- terminal escape codes are what these tests look for */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { BIN, cliEnv, jsonLines, runCli, startOperatorServer, storeSnapshot } from './operator-harness.js';

/*
 * The operator commands in a pseudo-terminal (test/support/pty-run.py, Python's pty module): a
 * long wait shows one progress line rewritten in place (carriage return, erase line) with the
 * run's status, current step and elapsed time, statuses are coloured, NO_COLOR turns colours
 * off, and Ctrl-C stops following without touching the run. The same commands on a pipe print
 * plain lines with neither.
 */

const PTY = path.resolve('test/support/pty-run.py');
const python = spawnSync('python3', ['-c', 'import pty, termios'], { stdio: 'ignore' }).status === 0;

const ERASE = '\r\x1b[2K';
const SGR = /\x1b\[\d+(;\d+)*m/g;

let db: MigratedDatabase;
let server: WaymarkProcess;
let address: string;

interface Terminal {
  output(): string;
  waitFor(pattern: RegExp): Promise<void>;
  type(text: string): void;
  exited: Promise<number | null>;
}

/** `waymark …args` in a pseudo-terminal. */
function inTerminal(args: string[], env: Record<string, string> = {}): Terminal {
  const child = spawn('python3', [PTY, process.execPath, BIN, ...args], {
    env: cliEnv({ WAYMARK_ADDR: address, TERM: 'xterm-256color', ...env }), stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  const waiters: Array<{ pattern: RegExp; resolve: () => void }> = [];
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    for (const w of waiters.splice(0)) (w.pattern.test(out.replace(SGR, '')) ? w.resolve : () => waiters.push(w))();
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return {
    output: () => out,
    waitFor: (pattern) => Promise.race([
      new Promise<void>((resolve) => (pattern.test(out.replace(SGR, '')) ? resolve() : waiters.push({ pattern, resolve }))),
      exited.then((code) => {
        if (!pattern.test(out.replace(SGR, ''))) throw new Error(`exited ${code} before ${pattern}; output: ${JSON.stringify(out)}`);
      }),
    ]),
    type: (text) => child.stdin.write(text),
    exited,
  };
}

/** The progress lines a terminal showed: the text after each erase-line, colours removed. */
function progressLines(output: string): string[] {
  return output.split(ERASE).slice(1).map((s) => s.replace(SGR, '').split(/[\r\n]/)[0]!).filter(Boolean);
}

async function parkedOnSignal(): Promise<string> {
  const r = await runCli(['runs', 'start', 'await_go', '--input', '{}', '--wait', '-o', 'json'], { address });
  expect(r.code, r.stderr).toBe(0);
  return (jsonLines<{ run: { id: string } }>(r.stdout)[0]!).run.id;
}

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_operator_tty');
  ({ server, address } = await startOperatorServer(db));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

describe.skipIf(!python)('on a terminal', { timeout: 120_000 }, () => {
  it('runs events --follow shows one progress line with status, step and elapsed time, updated as the run moves, in colour', async () => {
    const runId = await parkedOnSignal();
    const t = inTerminal(['runs', 'events', runId, '--follow']);
    await t.waitFor(/run SUSPENDED[^\n]*\n[^]*\r\x1b\[2K[^\n]*SUSPENDED · signal go · \d/);
    const sent = await runCli(['signals', 'send', runId, 'go', '--payload', '{"n":3}'], { address });
    expect(sent.code, sent.stderr).toBe(0);
    expect(await t.exited).toBe(0);
    const out = t.output();
    const lines = progressLines(out);
    expect(lines.some((l) => /^. run \S+… · SUSPENDED · signal go · \d+(ms|\.\ds)/.test(l)), JSON.stringify(lines)).toBe(true);
    expect(lines.some((l) => /· SUCCEEDED · step double · /.test(l)), JSON.stringify(lines)).toBe(true);
    expect(lines.findIndex((l) => l.includes('SUSPENDED'))).toBeLessThan(lines.findIndex((l) => l.includes('SUCCEEDED')));
    expect(out).toContain('\x1b[33mSUSPENDED\x1b[39m'); // statuses in colour
    expect(out).toContain('\x1b[32mSUCCEEDED\x1b[39m');
    expect(out.endsWith(ERASE) || out.replace(SGR, '').trimEnd().endsWith('{"doubled":6}')).toBe(true); // the progress line is gone at the end
  });

  it('tables stay aligned with coloured cells', async () => {
    const runId = await parkedOnSignal();
    const t = inTerminal(['runs', 'journal', runId]);
    expect(await t.exited).toBe(0);
    expect(t.output()).toContain('\x1b[33msuspended\x1b[39m');
    const rows = t.output().replace(SGR, '').split(/\r?\n/).filter((l) => l.trim() !== '');
    const column = rows[0]!.indexOf('ATTEMPT');
    expect(rows.length).toBeGreaterThan(2);
    for (const row of rows.slice(1)) expect(row.slice(column - 2, column + 1), JSON.stringify(rows)).toMatch(/^ {2}\S$/);
  });

  it('runs start --wait shows the progress line, then the run', async () => {
    const t = inTerminal(['runs', 'start', 'await_go', '--input', '{}', '--wait']);
    expect(await t.exited).toBe(0);
    const out = t.output();
    expect(progressLines(out).some((l) => /^. run \S+… · (PENDING|RUNNING|SUSPENDED)/.test(l)), JSON.stringify(out)).toBe(true);
    expect(out.replace(SGR, '')).toMatch(/status\s+SUSPENDED/);
    expect(out).toContain('\x1b[1mstatus');
  });

  it('NO_COLOR keeps the progress line but drops the colours', async () => {
    const runId = await parkedOnSignal();
    const t = inTerminal(['runs', 'events', runId, '--follow'], { NO_COLOR: '1' });
    await t.waitFor(/SUSPENDED · signal go/);
    t.type('\x03');
    expect(await t.exited).toBe(130);
    expect(t.output()).toContain(ERASE);
    expect(t.output()).not.toMatch(SGR);
  });

  it('Ctrl-C stops following and leaves the run untouched', async () => {
    const runId = await parkedOnSignal();
    const before = await storeSnapshot(db);
    const t = inTerminal(['runs', 'events', runId, '--follow']);
    await t.waitFor(/SUSPENDED · signal go · \d/);
    t.type('\x03');
    expect(await t.exited).toBe(130);
    expect(t.output().replace(SGR, '')).toContain(`stopped following; run ${runId} was not changed (SUSPENDED when last seen)`);
    expect(await storeSnapshot(db)).toEqual(before);
    const r = await runCli(['runs', 'get', runId, '-o', 'json'], { address });
    expect(jsonLines<{ run: { status: string } }>(r.stdout)[0]!.run.status).toBe('RUN_STATUS_SUSPENDED');
  });
});

describe('on a pipe', { timeout: 120_000 }, () => {
  it('the same commands print plain lines: no colour, no carriage return, no progress line', async () => {
    const runId = await parkedOnSignal();
    const follow = runCli(['runs', 'events', runId, '--follow'], { address });
    const waited = await runCli(['runs', 'start', 'await_go', '--input', '{}', '--wait'], { address });
    await runCli(['signals', 'send', runId, 'go', '--payload', '{"n":1}'], { address });
    for (const r of [await follow, waited]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout + r.stderr).not.toMatch(/\x1b|\r/);
    }
    expect((await follow).stdout).toMatch(/^\s+\d+\s+\d\d:\d\d:\d\d\.\d{3}\s+run SUCCEEDED\s+\{"doubled":2\}$/m);
    expect(waited.stdout).toMatch(/^started run \S+\n\s+0\s+\S+\s+run RUNNING\n/);
  });
});
