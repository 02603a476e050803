import type { Timestamp } from '@bufbuild/protobuf/wkt';
import { fromValue, type JsonValue } from '@waymark-dev/client';

/* Text for the table output: durations, times, JSON values, aligned columns. */

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "500ms", "10s", "2m", "1h30m" in milliseconds; a bare number is seconds. undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return undefined;
  return parts.reduce((ms, p) => ms + Number(p[1]) * UNITS[p[2]!]!, 0);
}

/** 12ms, 3.4s, 2m05s, 1h02m, 3d04h. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')}h`;
}

export function millis(t: Timestamp | undefined): number | undefined {
  return t === undefined ? undefined : Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6);
}

/** UTC, to the second: 2026-12-01T11:51:25Z. */
export function formatTime(t: Timestamp | undefined): string {
  const ms = millis(t);
  return ms === undefined ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** UTC time of day to the millisecond, for event lines: 11:51:25.318. */
export function formatClock(t: Timestamp | undefined): string {
  const ms = millis(t);
  return ms === undefined ? '--:--:--.---' : new Date(ms).toISOString().slice(11, 23);
}

/** A google.protobuf.Value as compact JSON ("-" when unset), cut to `max` characters. */
export function formatValue(value: Parameters<typeof fromValue>[0], max = 200): string {
  const json: JsonValue | undefined = fromValue(value);
  return json === undefined ? '-' : clip(JSON.stringify(json), max);
}

export function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, Math.max(0, max - 1))}…`;
}

export function formatUsd(usd: number | undefined): string {
  if (usd === undefined) return '-';
  return usd !== 0 && Math.abs(usd) < 0.01 ? `$${usd.toPrecision(2)}` : `$${usd.toFixed(2)}`;
}

export function formatLabels(labels: Record<string, string>): string {
  const entries = Object.entries(labels);
  return entries.length === 0 ? '-' : entries.map(([k, v]) => `${k}=${v}`).join(',');
}

// eslint-disable-next-line no-control-regex -- colour codes are what it removes
const SGR = /\x1b\[\d+(;\d+)*m/g;

/** Characters a terminal shows: colour codes take no width. */
function visible(s: string): number {
  return s.replace(SGR, '').length;
}

/** Aligned columns (cells may be coloured already); `paint` styles a cell after padding. */
export function table(header: string[], rows: string[][], paint: (cell: string, column: number, row: number) => string = (c) => c): string {
  const widths = header.map((h, i) => Math.max(visible(h), ...rows.map((r) => visible(r[i] ?? ''))));
  const pad = (c: string, width: number) => c + ' '.repeat(Math.max(0, width - visible(c)));
  const line = (cells: string[], row: number) =>
    cells.map((c, i) => (i === cells.length - 1 ? paint(c, i, row) : paint(pad(c, widths[i]!), i, row))).join('  ').trimEnd();
  return [line(header, -1), ...rows.map((r, i) => line(r, i))].join('\n') + '\n';
}

/** Key-value lines for one object (`runs get`, `approvals get`). */
export function fields(pairs: Array<[string, string]>, paintKey: (k: string) => string = (k) => k): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${paintKey(k.padEnd(width))}  ${v}`).join('\n') + '\n';
}
