import { PayloadTooLargeError } from './errors.js';
import type { Json } from './run.js';

/** Limits from DESIGN.md "Limits"; each is a setting. A refused request writes nothing. */
export interface Limits {
  /** Largest gRPC request message, in bytes. */
  requestBytes: number;
  /** Largest JSON payload (input, output, signal, tool result), in bytes of its JSON text. */
  payloadBytes: number;
  /** Most journal entries one run may hold. */
  journalEntries: number;
  /** Most concurrent event streams one replica serves. */
  streamsPerReplica: number;
}

export const DEFAULT_LIMITS: Limits = {
  requestBytes: 4 * 1024 * 1024,
  payloadBytes: 1024 * 1024,
  journalEntries: 100_000,
  streamsPerReplica: 1000,
};

/** Throws PayloadTooLargeError naming `field` when the JSON text of `value` passes the limit. */
export function assertPayloadSize(field: string, value: Json | null | undefined, limitBytes: number): void {
  if (value === undefined || value === null) return;
  const size = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (size > limitBytes) throw new PayloadTooLargeError(field, size, limitBytes);
}
