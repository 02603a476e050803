import { spawn } from 'node:child_process';
import path from 'node:path';
import type { MigratedDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * What the operator-command tests share: a real `waymark server` on a fresh database with the
 * fixture workflows, and the built CLI (bin/waymark.js) run as a subprocess against it, the way
 * an operator runs it. Output is captured through pipes (no terminal: no colours, no progress
 * line); test/cli/operator-terminal.test.ts runs it in a pseudo-terminal instead.
 */

export const BIN = path.resolve('bin/waymark.js');
export const WORKFLOWS = path.resolve('test/cli/fixtures/operator-workflows.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI run: none of the connection variables of the enclosing shell. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (/^WAYMARK_/.test(k) || k === 'NO_COLOR' || k === 'FORCE_COLOR') delete env[k];
  return { ...env, ...extra };
}

/** Runs `waymark …args` to completion. */
export function runCli(args: string[], options: { address?: string; env?: Record<string, string>; stdin?: string } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const env = cliEnv({ ...(options.address ? { WAYMARK_ADDR: options.address } : {}), ...options.env });
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

/** A started `waymark server` with the fixture workflows on `db`. */
export async function startOperatorServer(db: MigratedDatabase, env: Record<string, string> = {}): Promise<{ server: WaymarkProcess; address: string }> {
  const server = WaymarkProcess.start(['server', '--workflows', WORKFLOWS], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', ...env } });
  const address = await server.listening();
  return { server, address };
}

/** Row counts of every table a command could write to: equal before and after means nothing was written. */
export async function storeSnapshot(db: MigratedDatabase): Promise<Record<string, number>> {
  const { rows } = await db.admin.query<{ runs: string; journal: string; inbox: string; deadlines: string }>(
    `SELECT (SELECT count(*) FROM runs) AS runs, (SELECT count(*) FROM journal) AS journal,
            (SELECT count(*) FROM signal_inbox) AS inbox, (SELECT count(*) FROM suspension_deadlines) AS deadlines`,
  );
  const r = rows[0]!;
  return { runs: Number(r.runs), journal: Number(r.journal), inbox: Number(r.inbox), deadlines: Number(r.deadlines) };
}

/** The JSON lines of a `-o json` output. */
export function jsonLines<T = Record<string, unknown>>(stdout: string): T[] {
  return stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as T);
}

/** A CLI process still running (`--follow`): its output so far, and a wait for a line of it. */
export interface LiveCli {
  stdout(): string;
  /** Resolves once stdout matches; rejects if the process exits first. */
  waitFor(pattern: RegExp): Promise<void>;
  done: Promise<CliResult>;
}

export function startCli(args: string[], options: { address: string }): LiveCli {
  const child = spawn(process.execPath, [BIN, ...args], { env: cliEnv({ WAYMARK_ADDR: options.address }), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters: Array<{ pattern: RegExp; resolve: () => void; reject: (e: Error) => void }> = [];
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    for (const w of waiters.splice(0)) (w.pattern.test(stdout) ? w.resolve : () => waiters.push(w))();
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<CliResult>((resolve) => child.once('close', (code) => {
    for (const w of waiters.splice(0)) w.reject(new Error(`waymark ${args.join(' ')} exited ${code} first; stdout: ${stdout}; stderr: ${stderr}`));
    resolve({ code, stdout, stderr });
  }));
  return {
    stdout: () => stdout,
    waitFor: (pattern) => new Promise((resolve, reject) => (pattern.test(stdout) ? resolve() : waiters.push({ pattern, resolve, reject }))),
    done,
  };
}

/** One run's rows (journal entries, buffered signals), for a check that runs beside other tests. */
export async function runSnapshot(db: MigratedDatabase, runId: string): Promise<{ journal: number; inbox: number; status: string }> {
  const { rows } = await db.admin.query<{ journal: string; inbox: string; status: string }>(
    `SELECT (SELECT count(*) FROM journal WHERE run_id = $1) AS journal, (SELECT count(*) FROM signal_inbox WHERE run_id = $1) AS inbox,
            (SELECT status FROM runs WHERE id = $1) AS status`,
    [runId],
  );
  return { journal: Number(rows[0]!.journal), inbox: Number(rows[0]!.inbox), status: rows[0]!.status };
}
