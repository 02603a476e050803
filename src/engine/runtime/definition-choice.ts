// runtime/: chooseDefinition, what an execution under a lease does with the run's definition here.
// Must not execute anything nor end the run: run-driver.ts acts on the choice.
import type { Logger } from 'pino';
import { WorkflowNotFoundError } from '../../journal/errors.js';
import type { Lease, Run } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import type { Workflow } from '../author/workflow.js';
import { FlowDriftError } from '../errors.js';

/**
 * What to do with a run this replica holds the lease of (docs/recovery.md "Routing"): execute it
 * (on its pinned digest, or re-pinned to this replica's under drift `warn`, journaled), hand it back
 * for a replica that serves its workflow or its pinned digest, or fail it (drift `strict`).
 */
export type DefinitionChoice =
  | { kind: 'execute'; workflow: Workflow; run: Run; drifted: boolean }
  | { kind: 'hand-back'; why: string }
  | { kind: 'fail'; error: FlowDriftError };

const DRIFT_REASON = 'no live replica serves the digest the run was pinned to';

/**
 * The choice for `run` under `lease`. A drift `warn` re-pins the run and journals the change
 * (runDigestSet) before anything executes on the new code, so GetRun shows the digest it runs on.
 * Store failures throw (the caller stops the execution).
 */
export async function chooseDefinition(p: {
  store: JournalStore; run: Run; lease: Lease; log: Logger; definitionOf: (run: Run) => Promise<Workflow>;
}): Promise<DefinitionChoice> {
  const { store, run, lease, log } = p;
  let workflow: Workflow;
  try {
    workflow = await p.definitionOf(run);
  } catch (error) {
    // Not ours to execute (an inline execution on the wrong replica): the sweeper reports it while none does.
    if (error instanceof WorkflowNotFoundError) return { kind: 'hand-back', why: 'this replica does not serve the workflow' };
    throw error;
  }
  if (run.workflowDigest === workflow.digest) return { kind: 'execute', workflow, run, drifted: false };
  if (await digestServedElsewhere(store, run)) return { kind: 'hand-back', why: 'a live replica serves the digest the run is pinned to' };
  if (workflow.drift === 'strict') return { kind: 'fail', error: new FlowDriftError(run.id, workflow.name, run.workflowDigest, workflow.digest) };
  log.warn({ from: run.workflowDigest, to: workflow.digest }, 'executing against a changed definition (drift policy warn); the journal decides replay per content key');
  const { run: repinned } = await store.runDigestSet({
    lease, drift: { from: run.workflowDigest, to: workflow.digest, policy: 'warn', reason: DRIFT_REASON },
  });
  return { kind: 'execute', workflow, run: repinned, drifted: true };
}

/** Whether a live replica serves the run's exact digest (a run goes there rather than drift). */
async function digestServedElsewhere(store: JournalStore, run: Run): Promise<boolean> {
  try {
    return (await store.replicaList()).some((r) => r.workflows.some((w) => w.name === run.workflowName && w.digest === run.workflowDigest));
  } catch {
    return false;
  }
}
