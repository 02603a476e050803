import { toJson, type JsonValue } from '@bufbuild/protobuf';
import { timestampDate, ValueSchema, type Timestamp, type Value } from '@bufbuild/protobuf/wkt';
import { RunStatus, runStatusName } from '@waymark-dev/client/browser';

/** Display helpers shared by the pages. */

export function json(value: Value | undefined): JsonValue | undefined {
  return value === undefined ? undefined : toJson(ValueSchema, value);
}

export function ms(ts: Timestamp | undefined): number | undefined {
  return ts ? timestampDate(ts).getTime() : undefined;
}

export function age(ts: Timestamp | undefined, now = Date.now()): string {
  const t = ms(ts);
  return t === undefined ? '—' : duration(now - t);
}

export function duration(d: number): string {
  if (d < 1000) return `${Math.max(0, Math.round(d))} ms`;
  if (d < 60_000) return `${(d / 1000).toFixed(d < 10_000 ? 1 : 0)} s`;
  if (d < 3_600_000) return `${Math.floor(d / 60_000)} min`;
  if (d < 86_400_000) return `${Math.floor(d / 3_600_000)} h ${Math.floor((d % 3_600_000) / 60_000)} min`;
  return `${Math.floor(d / 86_400_000)} d`;
}

export function usd(v: number | undefined): string {
  if (v === undefined) return '—';
  if (v === 0) return '$0';
  return v < 0.01 ? `$${Number(v.toPrecision(2))}` : `$${v.toFixed(2)}`;
}

export function when(ts: Timestamp | undefined): string {
  const t = ms(ts);
  return t === undefined ? '—' : new Date(t).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

export function statusName(s: RunStatus): string {
  return runStatusName(s).toLowerCase();
}

export function short(value: unknown, max = 120): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function pretty(value: unknown): string {
  return value === undefined ? '' : JSON.stringify(value, null, 2);
}

export function shortId(id: string): string {
  return id.length > 13 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
}

export const RUN_STATUSES = [RunStatus.PENDING, RunStatus.RUNNING, RunStatus.SUSPENDED, RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED];

/** A Connect error as one line for the page. */
export function errorText(err: unknown): string {
  const e = err as { rawMessage?: string; message?: string; code?: number };
  return e.rawMessage ?? e.message ?? String(err);
}
