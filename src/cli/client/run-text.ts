import {
  approvalStateName, entryStatusName, fromValue, runStatusName, type ApprovalState, type JournalEntry, type RunEvent, type RunStatus,
} from '@waymark-dev/client';
import { clip, formatClock, formatValue } from './format.js';
import type { Output, Style } from './output.js';

/* How runs, entries and events read in the table output, with their colours. */

const RUN_STYLE: Record<string, Style> = { PENDING: 'dim', RUNNING: 'cyan', SUSPENDED: 'yellow', SUCCEEDED: 'green', FAILED: 'red', CANCELLED: 'magenta' };
const ENTRY_STYLE: Record<string, Style> = { running: 'cyan', ok: 'green', error: 'red', cancelled: 'magenta', suspended: 'yellow', resolved: 'green', noop: 'dim', info: 'dim' };
const APPROVAL_STYLE: Record<string, Style> = { PENDING: 'yellow', APPROVED: 'green', DENIED: 'red', TIMED_OUT: 'magenta', CANCELLED: 'magenta' };

export function runStatusText(out: Output, status: RunStatus): string {
  const name = runStatusName(status);
  return out.paint(name, RUN_STYLE[name] ?? 'bold');
}

export function entryStatusText(out: Output, status: JournalEntry['status']): string {
  const name = entryStatusName(status).toLowerCase();
  return out.paint(name, ENTRY_STYLE[name] ?? 'bold');
}

export function approvalStateText(out: Output, state: ApprovalState): string {
  const name = approvalStateName(state);
  return out.paint(name, APPROVAL_STYLE[name] ?? 'bold');
}

/** Who closed a wait, for a resolution entry: the deciding person, or the source (timeout, signal, cancel). */
export function resolvedBy(entry: JournalEntry): string {
  const payload = fromValue(entry.payload);
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return '';
  if (typeof payload.by === 'string' && payload.by) return payload.by;
  return typeof payload.source === 'string' ? payload.source : '';
}

/** A `drift` status entry's detail (the digests it moved between, short as `runs get` prints them); '' for other status entries. */
function driftDetail(drift: unknown, max: number): string {
  if (drift === null || typeof drift !== 'object' || Array.isArray(drift)) return '';
  const { from, to } = drift as { from?: unknown; to?: unknown };
  if (typeof from !== 'string' || typeof to !== 'string') return '';
  return clip(`digest ${from.slice(0, 12)} -> ${to.slice(0, 12)} (no live replica serves the old one)`, max);
}

/** The short detail of an entry: its error, a wait's title, a resolution's value, else its payload. */
export function entryDetail(entry: JournalEntry, max = 80): string {
  if (entry.error) return clip(`${entry.error.name}: ${entry.error.message}`, max);
  // A payload stored out of line (docs/journal.md "Large payloads"): what it is, not its bytes.
  if (entry.payload === undefined && entry.payloadRef) return clip(`(${entry.payloadRef.sizeBytes} bytes stored out of line, sha256 ${entry.payloadRef.sha256.slice(0, 12)})`, max);
  const payload = fromValue(entry.payload);
  if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) {
    if (entry.kind === 'status') return driftDetail(payload.drift, max);
    if (typeof payload.title === 'string') return clip(payload.title, max);
    if ('value' in payload && (typeof payload.source === 'string')) return clip(JSON.stringify(payload.value ?? null), max);
  }
  return entry.payload === undefined ? '' : formatValue(entry.payload, max);
}

/** One event as a line of `runs events` (and of `--wait` on a pipe). */
export function eventLine(out: Output, event: RunEvent): string {
  const head = `${String(event.seq).padStart(4)}  ${out.paint(formatClock(event.createTime), 'dim')}  `;
  if (event.body.case === 'statusChanged') {
    const change = event.body.value;
    const tail = change.error ? `  ${clip(`${change.error.name}: ${change.error.message}`, 100)}` : change.output ? `  ${formatValue(change.output, 100)}` : '';
    return `${head}${out.paint('run', 'bold')} ${runStatusText(out, change.status)}${tail}`;
  }
  if (event.body.case === 'entry') {
    const e = event.body.value;
    const detail = entryDetail(e);
    const by = resolvedBy(e);
    return `${head}${e.kind} ${out.paint(e.name, 'bold')}  ${entryStatusText(out, e.status)}${by ? ` by ${by}` : ''}${detail ? `  ${detail}` : ''}`;
  }
  return `${head}(an event this client does not know)`;
}
