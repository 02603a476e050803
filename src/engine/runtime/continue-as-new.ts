// runtime/: ctx.continueAsNew's request and the hand-over that ends a run and creates its successor in one store call.
// Must not write anything but through store.runContinueAsNew (both or neither), nor execute the successor (an executor claims it).
import { InvalidInputError } from '../errors.js';
import { zodViolations } from '../replay/payload-schema.js';
import type { Logger } from 'pino';
import type { Workflow } from '../author/workflow.js';
import { PayloadTooLargeError, UnstorableValueError, WaymarkError } from '../../journal/errors.js';
import type { Json, Lease, Run } from '../../journal/run.js';
import { CONTINUE_LABELS } from '../../journal/fork-labels.js';
import { executionStopped, type ExecuteResult } from './execute-result.js';
import type { JournalStore, RunContinueAsNewResult } from '../../store/store.js';
import { crashpoint, unsafeContinueTwoSteps } from './crashpoint.js';

/*
 * Continue as new (docs/workflows.md "Continue as new"): ctx.continueAsNew(input) rejects with a
 * ContinueAsNewRequest, which ends the body like a throw; the RunDriver hands it here instead of
 * failing the run. The successor is a fresh run of the same workflow (the definition executing
 * now) with the new input, the run's labels (its own waymark.* ones left behind), what is left of
 * its budget, its dry-run flag and the workflow's timeout. The hand-over is one store call: the
 * successor created PENDING and the run ended SUCCEEDED with `{ continuedAsNew: <id> }`, linked
 * both ways, or nothing. A crash before it re-executes the run, which replays to the same call and
 * hands over then; a crash after it finds the run finished and the successor PENDING, claimed by
 * any executor. The crash points `continue-as-new:before-intent` and `:after-terminal` bracket it
 * (test/chaos/continue-as-new.test.ts).
 */

/** What ctx.continueAsNew rejects with: not an error of the workflow's; the driver acts on it. */
export class ContinueAsNewRequest extends Error {
  override readonly name = 'ContinueAsNewRequest';
  constructor(readonly input: Json) {
    super('the run continues as new (ctx.continueAsNew); this is not a failure');
  }
}

/** ctx.continueAsNew in a child run: its parent waits for it to end. */
export class ContinueAsNewRefusedError extends WaymarkError {
  readonly reason = 'CONTINUE_AS_NEW_REFUSED';
  constructor(why: string) {
    super(`the run cannot continue as new: ${why}`);
  }
}

/** Spend is counted over this many levels of child runs, as read/spend.ts MAX_SPEND_DEPTH. */
const SPEND_DEPTH = 32;

/**
 * Ends `run` (held under `lease`) and creates its successor. InvalidInputError when the input does
 * not fit the workflow's schema and a plain Error for a child run (which cannot continue as new:
 * its parent waits on it): the run then fails with it, nothing handed over.
 */
export async function continueAsNew(p: {
  store: JournalStore; lease: Lease; run: Run; workflow: Workflow; request: ContinueAsNewRequest;
}): Promise<RunContinueAsNewResult> {
  const { store, lease, run, workflow, request } = p;
  if (run.parentRunId !== null) throw new ContinueAsNewRefusedError('it is a child run, whose parent waits for it to end; return instead');
  const parsed = workflow.input.safeParse(request.input);
  if (!parsed.success) throw new InvalidInputError(`the input of ctx.continueAsNew (workflow "${workflow.name}")`, zodViolations(parsed.error));
  let budgetUsd: number | null = null;
  if (run.budgetUsd !== null) {
    const spent = await store.journalSpend({ runId: run.id, namespace: run.namespace, maxDepth: SPEND_DEPTH });
    budgetUsd = Math.max(0, run.budgetUsd - spent.ownUsd - spent.childrenUsd);
  }
  const labels = Object.fromEntries(Object.entries(run.labels).filter(([k]) => !k.startsWith('waymark.')));
  const successor = {
    namespace: run.namespace, workflowName: run.workflowName, workflowVersion: workflow.version, workflowDigest: workflow.digest,
    input: request.input, labels, budgetUsd, dryRun: run.dryRun, timeoutMs: workflow.timeoutMs,
  };
  crashpoint('continue-as-new', 'before-intent');
  if (unsafeContinueTwoSteps) {
    await store.runCreate({ ...successor, labels: { ...labels, [CONTINUE_LABELS.from]: run.id } });
    crashpoint('continue-as-new', 'after-intent');
  }
  const handed = await store.runContinueAsNew({ lease, successor });
  crashpoint('continue-as-new', 'after-terminal');
  return handed;
}

/**
 * The RunDriver's end of an execution that asked to continue as new: the hand-over, reported as a
 * succeeded execution with `continuedAs`; a refusal (bad input, a child run, an input too large)
 * fails the run through `fail`; a lost lease or a store failure stops the execution, and the run's
 * next execution replays to the same request and hands over then.
 */
export async function continueAsNewEnd(p: Parameters<typeof continueAsNew>[0] & { log: Logger; fail: (error: unknown) => Promise<ExecuteResult> }): Promise<ExecuteResult> {
  let handed: RunContinueAsNewResult;
  try {
    handed = await continueAsNew(p);
  } catch (error) {
    const refused = error instanceof InvalidInputError || error instanceof ContinueAsNewRefusedError || error instanceof PayloadTooLargeError || error instanceof UnstorableValueError;
    return refused ? p.fail(error) : executionStopped(p.run.id, error, p.log);
  }
  p.log.info({ status: handed.run.status, successor: handed.successor.id }, 'execution ended: the run continued as new');
  return { runId: p.run.id, outcome: 'succeeded', run: handed.run, waitingOn: [], error: null, continuedAs: handed.successor.id };
}
