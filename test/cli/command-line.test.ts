import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * Issue 30's strict command lines, as a person meets them: every command refuses an unknown option
 * in one line naming the closest valid one (exit 2, before anything starts), a top-level typo is one
 * line with a suggestion, no arguments is the help with exit 2, and every server command has a
 * --help of its own. No server is needed: nothing here may get as far as starting one.
 */

const BIN = path.resolve('bin/waymark.js');

function waymark(...args: string[]) {
  // DATABASE_URL points nowhere: a command that wrongly went on to start would fail differently.
  const run = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8', env: { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', WAYMARK_METRICS_ADDR: '127.0.0.1:0' }, timeout: 60_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr, lines: run.stderr.trimEnd().split('\n') };
}

describe('strict command lines', () => {
  it.each([
    [['dev', '--workflow', './workflows.ts'], 'waymark dev: unknown option --workflow; did you mean --workflows? (see waymark dev --help)'],
    [['dev', '--bogus'], 'waymark dev: unknown option --bogus (see waymark dev --help)'],
    [['server', '--adr', '127.0.0.1:0'], 'waymark server: unknown option --adr; did you mean --addr? (see waymark server --help)'],
    [['sweeper', '--workflows', 'x.ts'], 'waymark sweeper: unknown option --workflows (see waymark sweeper --help)'],
    [['migrate', '--dry-run'], 'waymark migrate: unknown option --dry-run (see waymark migrate --help)'],
    [['bootstrap-key', '--nmae', 'ops'], 'waymark bootstrap-key: unknown option --nmae; did you mean --name? (see waymark bootstrap-key --help)'],
    [['server', 'extra'], 'waymark server: unexpected argument "extra" (see waymark server --help)'],
    [['runs', 'list', '--limt', '3'], 'waymark runs list: unknown option --limt; did you mean --limit? (see waymark runs list --help)'],
    [['deb'], 'waymark: unknown command "deb"; did you mean "dev"? (waymark --help lists every command)'],
    [['wrkflows', 'list'], 'waymark: unknown command "wrkflows"; did you mean "workflows"? (waymark --help lists every command)'],
    [['--verison'], 'waymark: unknown option --verison; did you mean --version? (waymark --help lists every command)'],
    [['frobnicate'], 'waymark: unknown command "frobnicate" (waymark --help lists every command)'],
    [['runs', 'lsit'], 'waymark runs: unknown command "lsit"; one of start, get, list, cancel, journal, events, resume, provenance, export, fork, compare, purge; did you mean "list"? (see waymark runs --help)'],
  ])('waymark %j: one line, exit 2', (args, line) => {
    const r = waymark(...args);
    expect(r.lines).toEqual([line]);
    expect(r.stdout).toBe('');
    expect(r.code).toBe(2);
  });

  it('no arguments: the help on standard error, exit 2', () => {
    const r = waymark();
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('Usage:');
    expect(r.stderr).toContain('waymark dev');
  });

  it.each(['dev', 'server', 'sweeper', 'migrate', 'bootstrap-key'])('waymark %s --help: its own usage, options and example, exit 0', (command) => {
    const r = waymark(command, '--help');
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')[0]).toMatch(new RegExp(`^Usage: waymark ${command}( \\[options\\])?$`));
    expect(r.stdout).toContain('--help');
    expect(r.stdout).toMatch(new RegExp(`Examples?:\\n {2}.*waymark ${command}`));
    // Not the top-level help.
    expect(r.stdout).not.toContain('Operator commands');
  });

  it('the help of each server command differs from the others', () => {
    const helps = ['dev', 'server', 'sweeper', 'migrate', 'bootstrap-key'].map((c) => waymark(c, '-h').stdout);
    expect(new Set(helps).size).toBe(helps.length);
  });
});

describe('errors name the command to run next', () => {
  it('an unknown workflow points at `waymark workflows list`, not at the RPC', async () => {
    const server = WaymarkProcess.start(['server'], { env: { DATABASE_URL: 'memory:', WAYMARK_ADDR: '127.0.0.1:0' } });
    try {
      const address = await server.listening();
      const r = waymark('runs', 'start', 'no_such_workflow', '--input', '{}', '--addr', address);
      expect(r.code).toBe(3);
      expect(r.lines).toHaveLength(1);
      expect(r.lines[0]).toMatch(/workflow "no_such_workflow" is not registered.*waymark workflows list shows the registered ones/);
      expect(r.lines[0]).not.toContain('ListWorkflows');
    } finally {
      await server.stop();
    }
  });
});
