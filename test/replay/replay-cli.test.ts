import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayJournal } from '../../src/index.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { jsonLines, runCli, type CliResult } from '../cli/operator-harness.js';
import * as original from './fixtures/order-original.js';
import * as reorderedModule from './fixtures/order-reordered.js';

/*
 * `waymark runs export` and `waymark replay` end to end (docs/replay.md): runs of a module really
 * execute on a real server over a real PostgreSQL, their journals are exported by the built CLI,
 * and the server is stopped before any replay, so the check runs with no server and no database.
 * Edited copies of the module then replay those files: a reorder of two sequential effects fails
 * naming the entry, an inserted call passes (a resume runs it live), --strict refuses it, and the
 * exit codes are the documented ones. replayJournal, the library call, gives the same verdicts.
 */

let db: MigratedDatabase;
let dir: string;
const journals: string[] = [];

const replay = (...args: string[]): Promise<CliResult> => runCli(['replay', ...args]);

/** The module of a variant of the "order" workflow (test/replay/fixtures/order-*.ts). */
const variant = (name: 'original' | 'reordered' | 'inserted' | 'renamed' | 'throws'): string => path.resolve(`test/replay/fixtures/order-${name}.ts`);

beforeAll(async () => {
  db = await createMigratedDatabase();
  dir = await mkdtemp(path.join(tmpdir(), 'waymark-replay-'));
  const server = WaymarkProcess.start(['server', '--workflows', variant('original')], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0' } });
  try {
    const address = await server.listening();
    for (const id of ['A-1', 'A-2', 'A-3']) {
      const started = await runCli(['runs', 'start', 'order', '--input', JSON.stringify({ id }), '--wait', '-o', 'json'], { address });
      expect(started.code, started.stderr).toBe(0);
      const [line] = jsonLines<{ run: { id: string; status: string } }>(started.stdout);
      expect(line!.run.status).toBe('RUN_STATUS_SUCCEEDED');
      const file = path.join(dir, 'journals', `order-${id}.json`);
      const exported = await runCli(['runs', 'export', line!.run.id, '--file', file], { address });
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stdout).toMatch(new RegExp(`^exported run ${line!.run.id} \\(order version 1\\): \\d+ entries to `));
      journals.push(file);
    }
  } finally {
    await server.stop();
  }
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await db?.drop();
});

describe('waymark runs export', () => {
  it('writes a versioned document holding the run and every entry as GetJournal returns it', async () => {
    const doc = JSON.parse(await readFile(journals[0]!, 'utf8'));
    expect(doc.format).toBe('waymark.journal.v1');
    expect(doc.run.workflowName).toBe('order');
    expect(doc.run.workflowVersion).toBe('1');
    expect(doc.run.workflowDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(doc.run.input).toEqual({ id: 'A-1' });
    expect(doc.run.status).toBe('RUN_STATUS_SUCCEEDED');
    expect(doc.entryCount).toBe(doc.entries.length);
    expect(doc.entries.map((e: { seq: string }) => Number(e.seq))).toEqual(doc.entries.map((_: unknown, i: number) => i));
    expect(doc.entries.some((e: { kind: string; name: string; status: string }) => e.kind === 'tool' && e.name === 'echo' && e.status === 'ENTRY_STATUS_OK')).toBe(true);
  });

  it('creates no file when the run cannot be read (here: no server)', async () => {
    const file = path.join(dir, 'missing.json');
    const r = await runCli(['runs', 'export', '01a23172-033b-7f93-91d6-20d4a94c98dd', '--file', file, '--timeout', '1s'], { address: '127.0.0.1:9' });
    expect(r.code).not.toBe(0);
    await expect(readFile(file)).rejects.toThrow();
    await expect(readFile(`${file}.partial`)).rejects.toThrow();
  });
});

describe('waymark replay', () => {
  it('passes every journal against the code that recorded it (concurrent calls finish in any order)', async () => {
    const r = await replay('--workflows', variant('original'), path.join(dir, 'journals'));
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n').filter((l) => l.startsWith('replays ')).length).toBe(3);
    expect(r.stdout).toMatch(/^3 journal\(s\): 3 replay, 0 diverged, 0 unreadable$/m);
    expect(r.code).toBe(0);
  });

  it('fails a module that reorders two effects, naming the file, the entry and the verdict', async () => {
    const r = await replay('--workflows', variant('reordered'), ...journals);
    const first = r.stdout.split('\n')[0]!;
    const entries: Array<{ seq: string; kind: string; name: string }> = JSON.parse(await readFile(journals[0]!, 'utf8')).entries;
    const reserve = entries.find((e) => e.name === 'reserve')!.seq;
    const charge = entries.find((e) => e.kind === 'tool')!.seq;
    // The code now charges first; the reservation, recorded before the charge, is the call out of order.
    expect(first).toContain(`DIVERGED    ${journals[0]} (order version 1, run `);
    expect(first).toContain(`: seq ${reserve} step "reserve": reordered: the journal recorded step "reserve" (seq ${reserve}) before tool "echo" (seq ${charge}), but the code now calls it after that one returned`);
    expect(r.stdout).toMatch(/^3 journal\(s\): 0 replay, 3 diverged, 0 unreadable$/m);
    expect(r.code).toBe(1);
  });

  it('passes an inserted call (a resume runs it live) and says so; --strict fails it', async () => {
    const inserted = variant('inserted');
    const r = await replay('--workflows', inserted, journals[0]!);
    expect(r.stdout).toContain(`replays     ${journals[0]}`);
    expect(r.stdout).toContain('note: new call step "audit" would run live here');
    expect(r.code).toBe(0);
    const strict = await replay('--workflows', inserted, '--strict', journals[0]!);
    expect(strict.stdout).toContain('step "audit": new_call:');
    expect(strict.code).toBe(1);
  });

  it('fails a module that no longer has the workflow, and one whose code now throws on the recorded answers', async () => {
    const gone = await replay('--workflows', variant('renamed'), journals[0]!);
    expect(gone.stdout).toContain('workflow "order": workflow_missing: the code has no workflow "order"');
    expect(gone.code).toBe(1);
    const throws = await replay('--workflows', variant('throws'), journals[0]!);
    expect(throws.stdout).toMatch(/status "[^"]*": outcome_changed: the recorded run SUCCEEDED, the code now fails on the same answers: Error: refuse A-1/);
    expect(throws.code).toBe(1);
  });

  it('prints one JSON object per file with --json', async () => {
    const r = await replay('--json', '--workflows', variant('reordered'), journals[0]!);
    const [line] = jsonLines<Record<string, any>>(r.stdout);
    expect(line).toMatchObject({ file: journals[0], status: 'diverged', ok: false, workflow: { name: 'order', version: '1' } });
    expect(line!.divergences[0]).toMatchObject({ verdict: 'reordered', kind: 'step', name: 'reserve' });
    expect(r.code).toBe(1);
  });

  it('exits 2 on usage errors and on files that are not exports', async () => {
    const module = variant('original');
    expect((await replay(journals[0]!)).code).toBe(2);
    expect((await replay('--workflows', module)).code).toBe(2);
    expect((await replay('--workflows', path.join(dir, 'nowhere.ts'), journals[0]!)).code).toBe(2);
    const notExport = path.join(dir, 'not-export.json');
    await writeFile(notExport, JSON.stringify({ format: 'something-else' }));
    const bad = await replay('--workflows', module, journals[0]!, notExport, path.join(dir, 'absent.json'));
    expect(bad.stdout).toContain(`unreadable  ${notExport}: not a journal export this version of waymark reads: its "format" is not "waymark.journal.v1"`);
    expect(bad.stdout).toContain(`unreadable  ${path.join(dir, 'absent.json')}: cannot read it (ENOENT)`);
    expect(bad.code).toBe(2);
  });
});

describe('replayJournal (the library call)', () => {
  it('gives the verdicts waymark replay prints', async () => {
    const text = await readFile(journals[1]!, 'utf8');
    expect(await replayJournal(original, text)).toMatchObject({ ok: true, divergences: [], outcome: 'succeeded', recordedStatus: 'SUCCEEDED' });
    const report = await replayJournal(reorderedModule, JSON.parse(text));
    expect(report.ok).toBe(false);
    expect(report.divergences).toEqual([expect.objectContaining({ verdict: 'reordered', kind: 'step', name: 'reserve' })]);
  });
});
