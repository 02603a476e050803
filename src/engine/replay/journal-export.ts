// replay/: reads a journal export (`waymark runs export`, docs/replay.md "The file") back into a run and its entries.
// Pure: parses a value already in memory; reads no file and touches no store or clock.
import { ENTRY_STATUSES, type EntryKind, type EntryStatus, type JournalEntry } from '../../journal/journal-entry.js';
import { RUN_STATUSES, type Json, type Run, type RunError, type RunStatus } from '../../journal/run.js';
import { JournalExportError } from '../errors.js';

/*
 * The export is the API's own JSON (the proto3 JSON mapping of Run and JournalEntry, as
 * `waymark runs journal -o json` prints them) inside a small envelope whose `format` names the
 * version (`waymark.journal.v1`, as the console's export). A reader accepts its own version and
 * refuses any other with a message, never guesses: a v2 may change what an entry means. Fields
 * at their default may be absent (the console omits them), and unknown fields are ignored. Kinds unknown to this version are kept as they are
 * (the proto says to treat them as opaque) and replay as any effect would.
 */

/** The format this reader knows, version included; the console's export writes it too (console/src/journal-file.ts). */
export const JOURNAL_EXPORT_FORMAT = 'waymark.journal.v1';

/** An export read back: the run as the journal's replay needs it, and its entries in seq order. */
export interface JournalExport {
  run: Run;
  entries: JournalEntry[];
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function text(o: Obj, field: string, where: string): string {
  const v = o[field] ?? '';
  if (typeof v !== 'string') throw new JournalExportError(`${where}.${field} must be a string`);
  return v;
}

/** An int64 of the proto3 JSON mapping (a string) or a plain number; `absent` when unset. */
function int(o: Obj, field: string, where: string, absent: number | null): number | null {
  const v = o[field];
  if (v === undefined || v === null) return absent;
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw new JournalExportError(`${where}.${field} must be a whole number`);
  return n;
}

function time(o: Obj, field: string): Date {
  const v = o[field];
  const d = typeof v === 'string' ? new Date(v) : new Date(0);
  return Number.isNaN(d.getTime()) ? new Date(0) : d;
}

function enumValue<T extends string>(v: unknown, prefix: string, values: readonly T[], where: string): T {
  const name = typeof v === 'string' && v.startsWith(prefix) ? v.slice(prefix.length).toLowerCase() : undefined;
  const found = values.find((x) => x.toLowerCase() === name);
  if (!found) throw new JournalExportError(`${where} is ${JSON.stringify(v)}, not one of ${values.map((x) => prefix + x.toUpperCase()).join(', ')}`);
  return found;
}

function runError(v: unknown): RunError | null {
  if (!isObj(v)) return null;
  const error: RunError = { name: typeof v.name === 'string' ? v.name : 'Error', message: typeof v.message === 'string' ? v.message : '' };
  if (typeof v.reason === 'string' && v.reason !== '') error.reason = v.reason;
  if (v.details !== undefined && v.details !== null) error.details = v.details as Json;
  return error;
}

function entryOf(v: unknown, i: number, runId: string): JournalEntry {
  const where = `entries[${i}]`;
  if (!isObj(v)) throw new JournalExportError(`${where} must be an object`);
  const seq = int(v, 'seq', where, 0)!;
  if (seq !== i) throw new JournalExportError(`${where} has seq ${seq}; an export holds the whole journal, seq 0 first, with no gaps`);
  const kind = text(v, 'kind', where);
  if (kind === '') throw new JournalExportError(`${where}.kind is empty`);
  const usage = isObj(v.usage)
    ? { inputTokens: int(v.usage, 'inputTokens', where, 0)!, outputTokens: int(v.usage, 'outputTokens', where, 0)!, totalTokens: int(v.usage, 'totalTokens', where, 0)! }
    : null;
  return {
    runId,
    seq,
    scope: text(v, 'scope', where),
    // A kind this version does not know stays as it is (the proto says: opaque); it replays as any effect.
    kind: kind as EntryKind,
    name: text(v, 'name', where),
    contentKey: text(v, 'contentKey', where),
    occurrence: int(v, 'occurrence', where, 0)!,
    status: enumValue<EntryStatus>(v.status, 'ENTRY_STATUS_', ENTRY_STATUSES, `${where}.status`),
    payload: v.payload === undefined ? null : (v.payload as Json),
    error: runError(v.error),
    refSeq: int(v, 'refSeq', where, null),
    idempotencyKey: text(v, 'idempotencyKey', where) || null,
    dedupeKey: text(v, 'dedupeKey', where) || null,
    usage,
    costUsd: typeof v.costUsd === 'number' ? v.costUsd : null,
    attempt: int(v, 'attempt', where, 0) || null,
    createdAt: time(v, 'createTime'),
  };
}

/**
 * Reads an export (its JSON text, or the value JSON.parse made of it). Throws JournalExportError
 * naming what is wrong: not JSON, another format, a version this reader does not know, an entry
 * that does not fit (replay then checks that the entries fit together: JournalCorruptError).
 */
export function parseJournalExport(exported: unknown): JournalExport {
  let doc = exported;
  if (typeof doc === 'string') {
    try {
      doc = JSON.parse(doc) as unknown;
    } catch (err) {
      throw new JournalExportError(`it is not JSON (${(err as Error).message})`);
    }
  }
  if (!isObj(doc)) throw new JournalExportError('it is not a JSON object');
  if (typeof doc.format === 'string' && /^waymark\.journal\.v\d+$/.test(doc.format) && doc.format !== JOURNAL_EXPORT_FORMAT) {
    throw new JournalExportError(`it is format ${doc.format} and this reader knows ${JOURNAL_EXPORT_FORMAT}`);
  }
  if (doc.format !== JOURNAL_EXPORT_FORMAT) throw new JournalExportError(`its "format" is not "${JOURNAL_EXPORT_FORMAT}"`);
  if (!isObj(doc.run)) throw new JournalExportError('"run" must be an object');
  if (!Array.isArray(doc.entries)) throw new JournalExportError('"entries" must be an array');
  const r = doc.run;
  const id = text(r, 'id', 'run');
  const status = enumValue<RunStatus>(r.status, 'RUN_STATUS_', RUN_STATUSES, 'run.status');
  const entries = doc.entries.map((e, i) => entryOf(e, i, id));
  const budget = typeof r.budgetUsd === 'number' ? r.budgetUsd : null;
  const run: Run = {
    id,
    namespace: text(r, 'namespace', 'run') || 'default',
    workflowName: text(r, 'workflowName', 'run'),
    workflowVersion: text(r, 'workflowVersion', 'run'),
    workflowDigest: text(r, 'workflowDigest', 'run'),
    status,
    input: r.input === undefined ? null : (r.input as Json),
    output: r.output === undefined ? null : (r.output as Json),
    error: runError(r.error),
    labels: isObj(r.labels) ? (r.labels as Record<string, string>) : {},
    idempotencyKey: text(r, 'idempotencyKey', 'run') || null,
    parentRunId: text(r, 'parentRunId', 'run') || null,
    parentSeq: null,
    budgetUsd: budget,
    dryRun: r.dryRun === true,
    leaseHolder: null,
    leaseExpiresAt: null,
    leaseEpoch: 0,
    nextSeq: entries.length,
    journalBytes: 0,
    recoveryCount: 0,
    deadlineAt: null,
    createdAt: time(r, 'createTime'),
    updatedAt: time(r, 'updateTime'),
  };
  if (run.workflowName === '') throw new JournalExportError('run.workflowName is empty');
  return { run, entries };
}
