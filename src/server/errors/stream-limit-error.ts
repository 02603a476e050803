import { WaymarkError } from '../../journal/errors.js';

/** A replica already serves its limit of event streams (DESIGN "Limits"); retry, or go to another replica. */
export class StreamLimitError extends WaymarkError {
  readonly reason = 'STREAM_LIMIT';
  override readonly retryable = true;
  constructor(readonly limit: number) {
    super(`this replica already serves ${limit} event streams, its limit (WAYMARK_MAX_STREAMS); retry shortly or connect to another replica`);
  }
}
