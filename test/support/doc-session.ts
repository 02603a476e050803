import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { createTestDatabase, type TestDatabase } from './database.js';
import { parseTranscript, TranscriptIds } from './doc-transcript.js';
import { codeBlocks, type CodeBlock } from './markdown-blocks.js';
import { WaymarkProcess } from './waymark-process.js';

/*
 * A reader following README.md or a page of docs/ (issue 30, Rust's doctests as the model): a
 * scratch "clone" (a folder outside the repository holding a symlink to each of the checkout's
 * top-level entries, .git and .waymark left out, so `npx waymark` and `.waymark/local-admin-key`
 * mean what the page says without touching the checkout's own data), `waymark dev` started there
 * the README's way (`npm start` is `node bin/waymark.js dev`; the test asserts so) with
 * authentication on, and the page's marked blocks run in order as printed. Only three things are
 * the test's own, each what a reader's machine already has: the database (the suite's throwaway
 * PostgreSQL instead of an embedded one in .waymark), the address (a free port, given to the
 * commands as WAYMARK_ADDR / WAYMARK_ADDRESS and put where a command prints `127.0.0.1:50051`),
 * and `waymark` on the PATH as the docs' `alias waymark="node $PWD/bin/waymark.js"`.
 */

const root = path.resolve('.');
const DEFAULT_ADDRESS = '127.0.0.1:50051';
/** No command of a page may take longer; a hung one fails with what it printed. */
const COMMAND_TIMEOUT_MS = 120_000;

export interface Followed {
  /** The blocks that ran (sh scripts and console transcripts), in order. */
  ran: CodeBlock[];
  /** Outputs compared with the page: transcript steps and output blocks. */
  compared: number;
  /** Blocks marked `needs=TOOL` that did not run because TOOL is not installed (`npm test` needs only Node and npm). */
  missing: CodeBlock[];
}

/** Whether a program is on the PATH. */
function installed(program: string): boolean {
  return spawnSync('bash', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0;
}

export class DocSession {
  /** What the page's commands exported (`export WAYMARK_TOKEN=…`): later blocks see it, as in a reader's shell. */
  private exported: Record<string, string> = {};

  private constructor(
    readonly clone: string,
    readonly address: string,
    private readonly scratch: string,
    private readonly db: TestDatabase,
    private readonly dev: WaymarkProcess,
  ) {}

  static async start(name: string): Promise<DocSession> {
    const db = await createTestDatabase(`waymark_doc_${name}`);
    const scratch = await mkdtemp(path.join(tmpdir(), `waymark-doc-${name}-`));
    const clone = path.join(scratch, 'waymark');
    await mkdir(clone);
    for (const entry of await readdir(root)) {
      if (entry !== '.git' && entry !== '.waymark') await symlink(path.join(root, entry), path.join(clone, entry));
    }
    const bin = path.join(scratch, 'bin');
    await mkdir(bin);
    await writeFile(path.join(bin, 'waymark'), `#!/bin/sh\nexec node "${clone}/bin/waymark.js" "$@"\n`);
    await chmod(path.join(bin, 'waymark'), 0o755);
    const dev = WaymarkProcess.start(['dev'], {
      cwd: clone,
      bin: path.join(clone, 'bin', 'waymark.js'),
      env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_AUTH: 'on', WAYMARK_DATA_DIR: undefined },
    });
    const address = await dev.listening();
    // "listening" comes before the replica records what it serves; a reader types the first
    // command later than a test does, so wait for what they would find (`workflows list`).
    await dev.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('replica registered'));
    return new DocSession(clone, address, scratch, db, dev);
  }

  async stop(): Promise<void> {
    await this.dev.stop('SIGTERM');
    await this.db.drop();
    await rm(this.scratch, { recursive: true, force: true });
  }

  /** A reader's shell: nothing of an enclosing `npm test`, the server's address, `waymark` on the PATH, npm offline. */
  private env(): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !/^(WAYMARK_|npm_|NO_COLOR$|FORCE_COLOR$)/i.test(k)) env[k] = v;
    }
    return {
      ...env,
      ...this.exported,
      PATH: `${path.join(this.scratch, 'bin')}${path.delimiter}${env.PATH ?? ''}`,
      WAYMARK_ADDR: this.address,
      WAYMARK_ADDRESS: this.address,
      npm_config_offline: 'true', npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false',
    };
  }

  /**
   * Runs `script` with bash in the clone; stdout alone, and stdout and stderr as a terminal shows
   * them. What it exported is kept for the next command.
   */
  private async bash(script: string, flags: string[]): Promise<{ code: number | null; stdout: string; output: string }> {
    const envFile = path.join(this.scratch, 'exported.env');
    const before = this.env();
    const result = await new Promise<{ code: number | null; stdout: string; output: string }>((resolve, reject) => {
      const traced = `trap 'env -0 > "${envFile}"' EXIT\n${script.replaceAll(DEFAULT_ADDRESS, this.address)}`;
      const child = spawn('bash', [...flags, '-c', traced], { cwd: this.clone, env: before, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => ((stdout += d), (output += d)));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), COMMAND_TIMEOUT_MS);
      child.once('error', reject);
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, output });
      });
    });
    for (const pair of (await readFile(envFile, 'utf8').catch(() => '')).split('\0')) {
      const eq = pair.indexOf('=');
      const [name, value] = [pair.slice(0, eq), pair.slice(eq + 1)];
      if (eq > 0 && before[name] !== value && !/^(PWD|OLDPWD|SHLVL|_)$/.test(name)) this.exported[name] = value;
    }
    await rm(envFile, { force: true });
    return result;
  }

  /** Follows a page's marked blocks in order; `where` names the page in failures (`docs/cli.md`). */
  async follow(where: string, markdown: string): Promise<Followed> {
    const ids = new TranscriptIds();
    const ran: CodeBlock[] = [];
    const missing: CodeBlock[] = [];
    let compared = 0;
    let lastStdout: string | undefined;
    for (const block of codeBlocks(markdown)) {
      const at = `${where}:${block.line}`;
      if (block.meta.skip) continue;
      if (typeof block.meta.needs === 'string' && !installed(block.meta.needs)) {
        console.warn(`${at}: not run: ${block.meta.needs} is not installed`);
        missing.push(block);
        continue;
      }
      if (typeof block.meta.file === 'string') {
        await writeFile(path.join(this.clone, block.meta.file), block.code);
      } else if (block.meta.run && block.lang === 'console') {
        for (const step of parseTranscript(block.code)) {
          const command = ids.command(step.command);
          // One shell per command, stderr merged into stdout in order, as a terminal shows both.
          const result = await this.bash(`exec 2>&1\n${command}`, ['-o', 'pipefail']);
          expect(result.code, `${at}: \`${command}\` exited ${result.code} (a page shows a failure with \`; echo "exit $?"\`):\n${result.output}`).toBe(0);
          expect(ids.actual(result.output), `${at}: \`${step.command}\` printed something other than the page`).toBe(ids.expected(step.expected));
          compared += 1;
        }
        ran.push(block);
      } else if (block.meta.run) {
        const result = await this.bash(block.code, ['-euo', 'pipefail']);
        expect(result.code, `${at} failed:\n${block.code}\n${result.output}`).toBe(0);
        lastStdout = result.stdout;
        ran.push(block);
      } else if (block.meta.output) {
        expect(lastStdout, `${at}: an output block needs a run block before it`).toBeDefined();
        expect(ids.actual(lastStdout!), `${at}: the printed output differs from the page's`).toBe(ids.expected(block.code));
        compared += 1;
      }
    }
    return { ran, compared, missing };
  }
}
