/*
 * Token deltas of model calls while they run (docs/agents.md "Token streams"): what the streaming
 * model call publishes and StreamRunEvents reads. Not the journal: a delta belongs to one attempt of
 * one model call, is written unfenced (a stale attempt's deltas are told apart by their attempt,
 * never mistaken for the final one's), may be lost, and is deleted after a retention period.
 */

export type ModelDeltaKind = 'start' | 'text' | 'tool_input';

/** One delta as a model call publishes it (index 0 of an attempt is its `start`). */
export interface NewModelDelta {
  index: number;
  kind: ModelDeltaKind;
  /** The text, or a tool call's argument text; empty for `start`. */
  text: string;
  /** A `tool_input` delta's call id and tool name (null otherwise). */
  toolCallId: string | null;
  toolName: string | null;
}

export interface ModelDelta extends NewModelDelta {
  runId: string;
  /**
   * Dense per run from 0, assigned when the delta is stored and in commit order: a reader that
   * resumes "after offset N" misses none and sees none twice (the stream's delta cursor).
   */
  offset: number;
  /** The seq of the model call's `running` entry: which call the delta belongs to. */
  entrySeq: number;
  /** The lease epoch the attempt ran under: a redispatch after a crash has a higher one. */
  attempt: number;
  createdAt: Date;
}

export interface ModelDeltaAppendParams {
  runId: string;
  entrySeq: number;
  attempt: number;
  deltas: readonly NewModelDelta[];
}

export interface ModelDeltaListParams {
  runId: string;
  /** Deltas with offset > afterOffset; -1 from the first. */
  afterOffset: number;
  limit: number;
}

/** Model call deltas. Part of JournalStore (store.ts), whose contract holds for each method. */
export interface ModelDeltaOps {
  /** Stores the deltas in order with the run's next offsets, and wakes `onDelta` subscribers of the run. */
  modelDeltaAppend(params: ModelDeltaAppendParams): Promise<void>;
  /** The run's deltas after `afterOffset`, in offset order. */
  modelDeltaList(params: ModelDeltaListParams): Promise<ModelDelta[]>;
  /** Deletes up to `limit` deltas stored before `before` (the store's clock); returns how many. */
  modelDeltaSweep(params: { before: Date; limit: number }): Promise<number>;
}
