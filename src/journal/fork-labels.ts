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
