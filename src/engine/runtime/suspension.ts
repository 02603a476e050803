// runtime/: the payloads of suspensions and resolutions, and whether a resolution fits its pinned schema.
// Must not touch a store: it reads the entries it is given.
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Json } from '../../journal/run.js';
import type { JournalWait } from '../../store/journal-params.js';
import type { PinnedSchema } from '../replay/payload-schema.js';
import { validatePinned } from '../replay/payload-schema.js';
import { isRemoteCall } from '../replay/replay.js';
import { isRetryTimer } from '../author/retry.js';

/*
 * The shapes of suspensions and resolutions (docs/journal.md "Suspensions"). A suspended entry
 * pins everything a resolver needs: the JSON Schema of the payload and its hash, a prompt, the
 * deadline and the decision applied at the deadline. A resolution never edits it; it is a new
 * entry pointing at it whose payload says where the decision came from.
 */

export interface SuspensionPayload {
  /** The approval name, the signal name, `sleep`, or the child's workflow name. */
  key: string;
  title: string;
  description?: string;
  schema: Json;
  schemaHash: string;
  /** ISO timestamp on the store's clock; the sweeper applies `onTimeout` once it passes. */
  deadlineAt?: string;
  /** The payload value a timeout resolves with; null: the wait fails with a timeout instead. */
  onTimeout: Json | null;
  /** Kind-specific details: the tool awaiting approval, the child's idempotency key. */
  [extra: string]: Json | undefined;
}

export type ResolutionSource = 'human' | 'signal' | 'timeout' | 'child' | 'operator' | 'worker';

export interface ResolutionPayload {
  source: ResolutionSource;
  /** The payload validated against the pinned schema; absent for a timeout without a default. */
  value?: Json;
  by?: string;
  /** The API key that made a decision or sent a signal (docs/security.md); absent with authentication off. */
  keyId?: string;
  comment?: string;
  timedOut?: boolean;
  [extra: string]: Json | undefined;
}

export function suspensionPayload(entry: JournalEntry): SuspensionPayload {
  return entry.payload as unknown as SuspensionPayload;
}

export function resolutionPayload(entry: JournalEntry): ResolutionPayload {
  const p = entry.payload;
  if (p === null || typeof p !== 'object' || Array.isArray(p)) return { source: 'operator', value: p };
  return p as unknown as ResolutionPayload;
}

export function pinnedOf(suspension: JournalEntry): PinnedSchema {
  const p = suspensionPayload(suspension);
  return { schema: p.schema ?? {}, schemaHash: p.schemaHash ?? '' };
}

/**
 * Whether a resolution may win its suspension: a timeout or child outcome written by Waymark
 * itself, or a value that passes the pinned schema. Replay skips invalid ones (the first valid
 * resolution in journal order wins) and counts them as `invalidResolutions`.
 */
export function resolutionIsValid(suspension: JournalEntry, resolution: JournalEntry): boolean {
  const r = resolutionPayload(resolution);
  if (r.source === 'child') return suspension.kind === 'child';
  // A remote tool's result (docs/workers.md): written by Waymark from a fenced CompleteTask.
  if (r.source === 'worker') return isRemoteCall(suspension);
  if (r.source === 'timeout' && r.value === undefined) return true;
  if (r.value === undefined) return false;
  return validatePinned(pinnedOf(suspension), r.value).length === 0;
}

/**
 * The open ones of a run's waits (the store's journalWaits): neither won by a valid resolution nor
 * cancelled (an invalidation, the run's end). What GetRun's waiting_on lists and CancelRun closes.
 */
export function openWaits(waits: readonly JournalWait[]): JournalEntry[] {
  return waits
    .filter(({ entry, referrers }) => !referrers.some((r) => r.status === 'cancelled' || (r.status === 'resolved' && resolutionIsValid(entry, r))))
    .map(({ entry }) => entry);
}

/** The resolution a passed deadline appends: the pinned default decision, or a bare timeout. */
export function timeoutResolution(suspension: JournalEntry): ResolutionPayload {
  const p = suspensionPayload(suspension);
  return p.onTimeout === null || p.onTimeout === undefined
    ? { source: 'timeout', timedOut: true }
    : { source: 'timeout', timedOut: true, value: p.onTimeout };
}

/** An approval's public id: the run id and the seq of its suspension. */
export function approvalId(runId: string, seq: number): string {
  return `${runId}:${seq}`;
}

export function parseApprovalId(id: string): { runId: string; seq: number } | null {
  const at = id.lastIndexOf(':');
  if (at <= 0) return null;
  const seq = Number(id.slice(at + 1));
  return Number.isSafeInteger(seq) && seq >= 0 ? { runId: id.slice(0, at), seq } : null;
}

/** What a parked run waits on, as the API shows it. */
export interface Waiting {
  seq: number;
  kind: string;
  name: string;
  title: string;
  description: string | null;
  /** Set for approvals (and approvals of `ask` tools): what DecideApproval takes. */
  approvalId: string | null;
  deadlineAt: string | null;
  schema: Json;
  /** A remote tool call (docs/workers.md): the live workers serving the tool and what the call waits for; set by GetRun. */
  remote?: { liveWorkers: number; detail: string };
  /** A retry's backoff (the wait before an effect's next attempt, any tool, remote or not): what it waits for. */
  backoff?: { detail: string };
}

export function waitingOf(entry: JournalEntry): Waiting {
  const p = suspensionPayload(entry);
  return {
    seq: entry.seq,
    kind: entry.kind,
    name: entry.name,
    title: p.title ?? entry.name,
    description: p.description ?? null,
    approvalId: entry.kind === 'approval' ? approvalId(entry.runId, entry.seq) : null,
    deadlineAt: p.deadlineAt ?? null,
    schema: p.schema ?? {},
    ...(isRetryTimer(entry) ? { backoff: { detail: `a retry backoff before attempt ${entry.attempt ?? '?'} of ${entry.kind} ${entry.name}${p.deadlineAt ? `, due ${p.deadlineAt}` : ''}` } } : {}),
  };
}
