import { RunStateError } from '../journal/errors.js';

/*
 * The RunStateErrors both stores raise with the same wording, so the conformance suite and the
 * server's error mapping see one answer whichever store is behind them.
 */

/** journalResolve named a seq that is not a suspension. */
export function notASuspension(runId: string, seq: number): RunStateError {
  return new RunStateError(runId, `without a suspension at seq ${seq}`, `suspended at seq ${seq}`);
}

/** journalAppend carried a dedupeKey this run's journal already holds (it is meant for resolutions). */
export function duplicateDedupeKey(runId: string, key: string): RunStateError {
  return new RunStateError(runId, `already holding an entry with dedupeKey "${key}"`, 'free of that dedupeKey');
}
