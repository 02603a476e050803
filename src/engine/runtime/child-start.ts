// runtime/: how ctx.child creates a child run: once per attempt (idempotent by key), under the parent's suspension.
// Must not execute the child (an executor claims it) nor write the parent's journal beyond closing its wait.
import type { Run } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import type { ResolveResult } from './resolutions.js';
import type { ChildStarter } from './workflow-context.js';

/**
 * ctx.child for runs of `parent`: creates the child (the same key returns the first one) and, when
 * it had already ended, closes the parent's wait at once through `resolveParent`, returning the
 * resolution that won.
 */
export function childStarter(params: {
  store: JournalStore; parent: Run; resolveParent: (child: Run) => Promise<ResolveResult | null>;
}): ChildStarter {
  const { store, parent } = params;
  return async ({ workflow, input, suspension, idempotencyKey }) => {
    const { run: child } = await store.runCreate({
      namespace: parent.namespace,
      workflowName: workflow.name,
      workflowVersion: workflow.version,
      workflowDigest: workflow.digest,
      input,
      idempotencyKey: `child:${idempotencyKey}:${suspension.seq}`,
      parentRunId: parent.id,
      parentSeq: suspension.seq,
      dryRun: parent.dryRun,
      // A child has its own deadline (its definition's timeout), not its parent's: when the parent
      // times out, its unfinished children are cancelled (runtime/run-ending.ts runTimeOut).
      timeoutMs: workflow.timeoutMs,
    });
    if (child.status !== 'SUCCEEDED' && child.status !== 'FAILED' && child.status !== 'CANCELLED') return null;
    const resolved = await params.resolveParent(child);
    return resolved ? resolved.winner : null;
  };
}
