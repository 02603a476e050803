import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { EntryStatus, ModelDeltaKind, type RunEvent } from './gen/waymark/v1/run_pb.js';

/*
 * A run's model call deltas as text (docs/clients.md "Token streams"). The stream below resumes
 * from the last seq and delta offset it delivered, so across reconnects and replicas every delta
 * arrives once and in order; this turns them into what a consumer wants: text per attempt, a mark
 * when a newer attempt of a call replaces an aborted one (drop that attempt's text), and the call's
 * journaled text when its result is recorded (the truth, whatever the deltas said).
 */

/** A model call attempt began. `supersedes`: an older attempt of the same call, now aborted; drop its text. */
export interface AttemptStarted {
  type: 'attempt';
  callSeq: bigint;
  attempt: bigint;
  supersedes: bigint | null;
}

/** Text the model produced, or (`tool-input`) a piece of a tool call's arguments. */
export interface TokenText {
  type: 'text' | 'tool-input';
  callSeq: bigint;
  attempt: bigint;
  /** Position within the attempt (0 is its start); a gap means deltas were lost. */
  index: number;
  text: string;
  /** `tool-input` only. */
  toolCallId?: string;
  toolName?: string;
  /** The stream's delta cursor (docs/api.md StreamRunEvents `after_delta_offset`). */
  offset: bigint;
}

/** The call's result was journaled: `text` is the recorded answer; `attempt` the last one seen (null if none). */
export interface CallFinished {
  type: 'result';
  callSeq: bigint;
  attempt: bigint | null;
  text: string;
}

export type TokenEvent = AttemptStarted | TokenText | CallFinished;

/** The token events of a run's event stream (one opened with deltas). */
export async function* tokensOf(events: AsyncIterable<RunEvent>): AsyncGenerator<TokenEvent, void, undefined> {
  /** The newest attempt seen per call (its running entry's seq). */
  const current = new Map<bigint, bigint>();
  for await (const event of events) {
    const body = event.body;
    if (body.case === 'entry') {
      const e = body.value;
      // A model call's result: its `ok` entry, pointing at the call's running entry.
      if (e.kind === 'model' && e.status === EntryStatus.OK && e.refSeq !== undefined) {
        const record = e.payload ? (toJson(ValueSchema, e.payload) as { text?: unknown }) : {};
        yield { type: 'result', callSeq: e.refSeq, attempt: current.get(e.refSeq) ?? null, text: typeof record.text === 'string' ? record.text : '' };
      }
      continue;
    }
    if (body.case !== 'modelDelta') continue;
    const d = body.value;
    const newest = current.get(d.callSeq);
    if (newest !== undefined && d.attempt < newest) continue; // a stale replica's late delta of an aborted attempt
    if (d.kind === ModelDeltaKind.ATTEMPT_START) {
      if (newest === d.attempt) continue;
      current.set(d.callSeq, d.attempt);
      yield { type: 'attempt', callSeq: d.callSeq, attempt: d.attempt, supersedes: newest ?? null };
      continue;
    }
    if (newest === undefined) {
      // Its start was swept or read before this stream began: the attempt still counts as begun.
      current.set(d.callSeq, d.attempt);
      yield { type: 'attempt', callSeq: d.callSeq, attempt: d.attempt, supersedes: null };
    }
    const tool = d.kind === ModelDeltaKind.TOOL_INPUT;
    yield {
      type: tool ? 'tool-input' : 'text', callSeq: d.callSeq, attempt: d.attempt, index: d.index, text: d.text, offset: d.offset,
      ...(tool ? { toolCallId: d.toolCallId, toolName: d.toolName } : {}),
    };
  }
}
