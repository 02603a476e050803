// read/: what a run waits on now (GetRun's waiting_on, StartRun's and ResumeRun's answers): its open suspensions.
// Read-only: must not write the journal nor read all of it (the waits and what refers to them only).
import type { JournalStore } from '../../store/store.js';
import type { RemoteCalls } from '../runtime/remote-calls.js';
import { openWaits, waitingOf, type Waiting } from '../runtime/suspension.js';

/**
 * The open suspensions of run `runId`, read from its waits and what refers to them, not its journal
 * (issue 22); a remote tool's wait also says which workers could take its task (remote-calls.ts).
 */
export async function runWaits(deps: { store: JournalStore; remote: RemoteCalls }, params: { runId: string; namespace: string }): Promise<Waiting[]> {
  const waits = openWaits(await deps.store.journalWaits({ runId: params.runId, namespace: params.namespace })).map(waitingOf);
  return waits.some((w) => w.kind === 'tool') ? deps.remote.describe(params, waits) : waits;
}
