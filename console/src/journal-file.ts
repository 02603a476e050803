import { fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { JournalEntrySchema, RunSchema, type JournalEntry, type Run } from '@waymark-dev/client/browser';
import type { RunData } from './run-data.js';

/*
 * A journal as a file (docs/console.md "Export and offline viewing"): one JSON document
 * `{ "format": "waymark.journal.v1", "exportedAt", "run", "entries" }` with the run and its
 * entries in the protobuf JSON mapping, the same shapes as the API's JSON and the CLI's
 * `-o json`. The offline viewer reads that, and also the CLI's `waymark runs journal <run> -o json`
 * (one entry per line).
 */

export const FORMAT = 'waymark.journal.v1';

export function exportName(data: RunData): string {
  return `waymark-run-${data.runId || 'journal'}.json`;
}

export function exportJournal(data: RunData): string {
  return JSON.stringify({
    format: FORMAT,
    exportedAt: new Date().toISOString(),
    run: data.run ? toJson(RunSchema, data.run) : null,
    entries: data.entries.map((e) => toJson(JournalEntrySchema, e)),
  }, null, 1);
}

/** Saves the run's journal as a file (a download of a Blob; nothing leaves the browser). */
export function downloadJournal(data: RunData): void {
  const url = URL.createObjectURL(new Blob([exportJournal(data)], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = exportName(data);
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function readJournalFile(text: string): { run: Run | undefined; entries: JournalEntry[] } {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') && !trimmed.includes('\n{')) {
    const doc = JSON.parse(trimmed) as { format?: string; run?: JsonValue; entries?: JsonValue[] };
    if (doc.format !== FORMAT || !Array.isArray(doc.entries)) throw new Error(`not a Waymark journal export (expected "format": "${FORMAT}")`);
    return {
      run: doc.run ? fromJson(RunSchema, doc.run, { ignoreUnknownFields: true }) : undefined,
      entries: doc.entries.map((e) => fromJson(JournalEntrySchema, e, { ignoreUnknownFields: true })),
    };
  }
  // `waymark runs journal <run> -o json`: one entry per line.
  const entries = trimmed.split('\n').filter((l) => l.trim()).map((l) => fromJson(JournalEntrySchema, JSON.parse(l) as JsonValue, { ignoreUnknownFields: true }));
  return { run: undefined, entries };
}
