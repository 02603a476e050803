import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

const BIN = path.resolve('bin/waymark.js');

export interface LogLine {
  level?: string;
  msg?: string;
  [key: string]: unknown;
}

/**
 * A real `waymark` process for tests: its JSON log lines are parsed as they arrive so a test waits
 * on an event ("listening", "stopped") instead of sleeping.
 */
export class WaymarkProcess {
  readonly logs: LogLine[] = [];
  stderr = '';
  private readonly waiters = new Set<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let parsed: LogLine;
      try {
        parsed = JSON.parse(line) as LogLine;
      } catch {
        parsed = { msg: line };
      }
      this.logs.push(parsed);
      for (const w of this.waiters) {
        if (w.match(parsed)) {
          this.waiters.delete(w);
          w.resolve(parsed);
        }
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.stderr += d));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** `bin`: another copy of bin/waymark.js (a checkout elsewhere); default this one's. */
  static start(args: string[], options: { env?: Record<string, string | undefined>; cwd?: string; bin?: string } = {}): WaymarkProcess {
    // Metrics on a free port: many test processes run at once and the default port is shared.
    // Authentication off unless a test turns it on (WAYMARK_AUTH: 'on'): these processes listen on
    // loopback addresses, and the server refuses auth off anywhere else.
    const env: Record<string, string | undefined> = { ...process.env, WAYMARK_LOG_LEVEL: 'info', WAYMARK_METRICS_ADDR: '127.0.0.1:0', WAYMARK_AUTH: 'off', ...options.env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
    const child = spawn(process.execPath, [options.bin ?? BIN, ...args], { cwd: options.cwd ?? process.cwd(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    return new WaymarkProcess(child);
  }

  /** Resolves with the first log line (past or future) that matches; rejects if the process exits first. */
  waitForLog(match: (l: LogLine) => boolean, timeoutMs = 60_000): Promise<LogLine> {
    const seen = this.logs.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter = { match, resolve };
      this.waiters.add(waiter);
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`timed out waiting for a log line; stderr: ${this.stderr.slice(-500)}`));
      }, timeoutMs);
      void this.exited.then(({ code, signal }) => {
        if (!this.waiters.has(waiter)) return;
        this.waiters.delete(waiter);
        clearTimeout(timer);
        reject(new Error(`waymark exited (${code ?? signal}) before the awaited log line; stderr: ${this.stderr.slice(-500)}`));
      });
      waiter.resolve = (l) => {
        clearTimeout(timer);
        resolve(l);
      };
    });
  }

  /** Waits for the "listening" line and returns the bound address. */
  async listening(): Promise<string> {
    const line = await this.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('waymark ') && l.msg.includes(' listening on '));
    return String(line.address);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}
