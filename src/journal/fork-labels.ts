/**
 * The labels that link a fork to its source and carry a fork's model (docs/forks.md). Labels, not
 * columns: ListRuns already filters by them (a source's forks are the runs labelled with its id),
 * GetRun shows them, and they travel with the run to every replica.
 */
export const FORK_LABELS = {
  /** On a fork: the id of the run it was forked from. */
  source: 'waymark.fork_of',
  /** On a fork: the seq of its source's journal it was forked at (the fork point, after moving to an effect's first entry). */
  seq: 'waymark.fork_seq',
  /** The model every live model call of ctx.agent uses instead of the one the code names (ForkRun `model`). */
  model: 'waymark.model',
} as const;

/**
 * The labels that link a run and its successor (ctx.continueAsNew, docs/workflows.md "Continue as
 * new"), both ways; written by the store's runContinueAsNew in the transaction that ends one and
 * creates the other. GetRun shows them as `continued_as_run_id` and `continued_from_run_id`.
 */
export const CONTINUE_LABELS = {
  /** On a run that continued as new: its successor's id. */
  as: 'waymark.continued_as',
  /** On a successor: the id of the run it continues. */
  from: 'waymark.continued_from',
} as const;

/** The idempotency key of a run's successor: a repeated hand-over finds the first successor. */
export function continueKey(runId: string): string {
  return `waymark:continue-as-new:${runId}`;
}
