import { once } from 'node:events';
import type { WriteStream } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import { toJson } from '@bufbuild/protobuf';
import { JournalEntrySchema, RunSchema } from '@waymark-dev/client';
import { call, str, type CommandSpec } from './command-spec.js';
import { EXIT } from './exit-codes.js';

/*
 * `waymark runs export RUN [--file FILE]`: a run's journal as one versioned JSON document
 * (docs/replay.md "The file"), what `waymark replay` reads. The journal is read page by page through
 * GetJournal and each entry is written as it arrives, so a 100,000-entry journal never sits in
 * memory; the document is written to FILE.partial and renamed, so a failed export leaves no file
 * that looks whole.
 */

/**
 * The `format` field, with its version: the console's journal export and offline viewer use the same
 * one (console/src/journal-file.ts), so either reads the other's files; docs/replay.md "The file".
 */
export const EXPORT_FORMAT = 'waymark.journal.v1';

const EMIT = { alwaysEmitImplicit: true } as const;

/** A writer that waits when the file's buffer is full (bounded memory on a slow disk or pipe). */
async function write(stream: WriteStream | NodeJS.WritableStream, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain');
}

const exportRun: CommandSpec = {
  group: 'runs', name: 'export', args: ['<run>'],
  summary: "Writes a run's journal as a versioned JSON file that waymark replay checks against new code.",
  details: [
    'The file holds the run (workflow name, version, digest, input, status) and every journal entry as',
    'GetJournal returns it (docs/replay.md "The file"). Without --file it goes to standard output.',
    'A run still executing is exported as far as its journal goes when each page is read.',
  ].join('\n'),
  options: { file: { type: 'string', short: 'f', value: 'FILE', help: 'write the export here (FILE.partial, renamed when complete) instead of standard output' } },
  examples: [
    'waymark runs export 01a23172-033b-7f93-91d6-20d4a94c98dd --file journals/refund-1.json',
    'waymark runs export 01a23172-033b-7f93-91d6-20d4a94c98dd > refund-1.json',
  ],
  async run(inv) {
    const runId = inv.args[0]!;
    const file = str(inv, 'file');
    const client = inv.client();
    // The run first: a run that does not exist fails before any file is created.
    const { run } = await client.getRun(runId, call(inv));
    const partial = file === undefined ? undefined : `${file}.partial`;
    let stream: WriteStream | NodeJS.WriteStream = process.stdout;
    if (partial !== undefined) {
      // Opened here so a folder that cannot be written fails as this command's error, not an unhandled stream event.
      await mkdir(path.dirname(partial), { recursive: true });
      stream = (await open(partial, 'w')).createWriteStream();
      // A write error surfaces through the drain wait or finished() below.
      stream.on('error', () => {});
    }
    let count = 0;
    try {
      const head = { format: EXPORT_FORMAT, exportedAt: new Date().toISOString(), run: toJson(RunSchema, run, EMIT) };
      await write(stream, `${JSON.stringify(head, null, 1).replace(/\n}$/, '')},\n "entries": [`);
      // Whole entries: an exported journal replays offline, so it carries the payloads stored out of line too.
      for await (const entry of client.journal(runId, { ...call(inv), includeLargePayloads: true })) {
        await write(stream, `${count === 0 ? '' : ','}\n  ${JSON.stringify(toJson(JournalEntrySchema, entry, EMIT))}`);
        count++;
        if (file !== undefined && count % 500 === 0) inv.out.progress(`exporting run ${runId}: ${count} entries`);
      }
      await write(stream, `${count === 0 ? '' : '\n '}],\n "entryCount": ${count}\n}\n`);
      if (partial !== undefined && file !== undefined) {
        stream.end();
        await finished(stream);
        await rename(partial, file);
      }
    } catch (err) {
      if (partial !== undefined) {
        (stream as WriteStream).destroy();
        await rm(partial, { force: true });
      }
      throw err;
    }
    if (file === undefined) return EXIT.ok;
    if (inv.out.json) inv.out.jsonValue({ runId, file, entries: count });
    else inv.out.print(`exported run ${runId} (${run.workflowName} version ${run.workflowVersion}): ${count} entries to ${file}`);
    return EXIT.ok;
  },
};

export const EXPORT_COMMANDS: CommandSpec[] = [exportRun];
