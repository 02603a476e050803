import type { ConnectRouter, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { DriftRecovery, RunService } from '../gen/waymark/v1/run_service_pb.js';
import { runSpend } from '../agent/budget.js';
import { roundUsd } from '../agent/prices.js';
import { runProvenance } from '../agent/provenance.js';
import type { Run } from '../journal/run.js';
import { decodeRunCursor } from '../store/run-cursor.js';
import type { ApiDeps } from './api-deps.js';
import { entryToProto } from './convert-journal.js';
import { previewToProto } from './convert-preview.js';
import { runProvenanceToProto } from './convert-provenance.js';
import { runStatusesFromProto, runToProto, waitingToProto, workflowToProto } from './convert-run.js';
import { withErrorMapping } from './error-mapping.js';
import { decodePageToken, encodePageToken } from './page-token.js';
import { PAGE_SIZES, RequestCheck } from './request-validation.js';
import { streamRunEvents, waitUntilSettled } from './run-events-stream.js';
import { abortable } from './shutdown-signal.js';
import { unimplemented } from './unimplemented.js';

/*
 * waymark.v1.RunService: each route validates (request-validation.ts), converts (convert-*.ts) and
 * delegates to the engine or the store; error-mapping.ts turns what they throw into statuses.
 */

export function runServiceImpl(deps: ApiDeps): ServiceImpl<typeof RunService> {
  const { engine } = deps;
  const store = engine.store;
  const check = () => new RequestCheck(deps.defaultNamespace);
  const waiting = async (run: Run) => (run.status === 'SUSPENDED' ? engine.runWaits({ runId: run.id, namespace: run.namespace }) : []);

  return {
    async startRun(req, ctx: HandlerContext) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const workflowName = c.workflow('workflow', req.workflow);
      const idempotencyKey = c.key('idempotency_key', req.idempotencyKey);
      const labels = c.labels('labels', req.labels);
      if (req.budgetUsd !== undefined && !(Number.isFinite(req.budgetUsd) && req.budgetUsd >= 0)) c.fail('budget_usd', 'must be a finite number >= 0');
      const input = c.json('input', req.input);
      c.done();
      c.payload('input', input, deps.limits);
      const started = deps.inline.track(() => engine.runStart({
        namespace, workflowName, input, labels, idempotencyKey: idempotencyKey || null, budgetUsd: req.budgetUsd ?? null,
        dryRun: req.dryRun, execute: req.wait,
      }));
      const result = await abortable(started, ctx.signal);
      // An execution stopped by a lost lease or a store failure reports no run: read where it stands.
      let run = result.execution ? (result.execution.run ?? await store.runGet({ runId: result.run.id, namespace })) : result.run;
      // A repeated key with `wait` waits for the first call's run, wherever it executes.
      if (!result.created && req.wait) run = await waitUntilSettled(deps, run, ctx.signal);
      return { run: runToProto(run), created: result.created, waitingOn: (await waiting(run)).map(waitingToProto) };
    },

    async getRun(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      c.done();
      const run = await store.runGet({ runId, namespace });
      // The spend budgets count: the run's own model calls and its children's, folded from the journal.
      const spent = await runSpend({ store, runId: run.id, namespace });
      return { run: runToProto(run, spent.totalUsd), waitingOn: (await waiting(run)).map(waitingToProto) };
    },

    async listRuns(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const { statuses, invalid } = runStatusesFromProto(req.statuses);
      if (invalid.length) c.fail('statuses', `unknown status values ${invalid.join(', ')}`);
      const workflowName = c.workflow('workflow', req.workflow, { required: false });
      const labels = c.labels('labels', req.labels);
      const parentRunId = c.runId('parent_run_id', req.parentRunId, { required: false });
      const pageSize = c.pageSize('page_size', req.pageSize, PAGE_SIZES.runs);
      const filter = { namespace, statuses: [...statuses].sort(), workflowName, labels: Object.entries(labels).sort(), parentRunId };
      c.done();
      const cursor = decodePageToken(req.pageToken, 'runs', filter, decodeRunCursor);
      // A filter of UNSPECIFIED only matches nothing (the proto says so).
      if (req.statuses.length > 0 && statuses.length === 0) return { runs: [], nextPageToken: '' };
      const page = await store.runList({
        namespace, pageSize, cursor, ...(statuses.length ? { statuses } : {}), ...(workflowName ? { workflowName } : {}),
        ...(Object.keys(labels).length ? { labels } : {}), ...(parentRunId ? { parentRunId } : {}),
      });
      // Kept cheap: one summing read for the page, each run's own entries only (not its children's).
      const spent = await store.journalCostTotals({ namespace, runIds: page.runs.map((r) => r.id) });
      return {
        runs: page.runs.map((r) => runToProto(r, roundUsd(spent.get(r.id) ?? 0))),
        nextPageToken: page.nextCursor ? encodePageToken('runs', filter, page.nextCursor) : '',
      };
    },

    async getJournal(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      const afterSeq = c.afterSeq('after_seq', req.afterSeq);
      const pageSize = c.pageSize('page_size', req.pageSize, PAGE_SIZES.journal);
      c.done();
      const filter = { namespace, runId };
      const cursor = decodePageToken(req.pageToken, 'journal', filter, (text) => {
        if (!/^\d{1,10}$/.test(text)) throw new TypeError('not a seq');
      });
      const entries = await store.journalList({ runId, namespace, afterSeq: cursor === null ? afterSeq : Number(cursor), limit: pageSize + 1 });
      const page = entries.slice(0, pageSize);
      const last = page[page.length - 1];
      return {
        entries: page.map(entryToProto),
        nextPageToken: entries.length > pageSize && last ? encodePageToken('journal', filter, String(last.seq)) : '',
      };
    },

    streamRunEvents: (req, ctx) => streamRunEvents(deps, req, ctx),

    async resumeRun(req, ctx: HandlerContext) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      const invalidate = req.invalidate.map((seq, i) => {
        if (seq < 0n || seq > 2_147_483_647n) c.fail(`invalidate[${i}]`, 'must be the seq of a journal entry');
        return Number(seq);
      });
      const drift = req.driftRecovery === DriftRecovery.RESTART ? 'restart' : req.driftRecovery === DriftRecovery.ABANDON ? 'abandon' : undefined;
      if (drift === undefined && req.driftRecovery !== DriftRecovery.UNSPECIFIED) c.fail('drift_recovery', `unknown value ${req.driftRecovery}`);
      if (drift !== undefined && (req.dryRun || invalidate.length > 0)) c.fail('drift_recovery', 'cannot be combined with dry_run or invalidate');
      c.done();
      if (req.dryRun) {
        const preview = await engine.runPreview({ runId, namespace, invalidate });
        return { run: runToProto(await store.runGet({ runId, namespace })), preview: previewToProto(preview) };
      }
      // The run becomes PENDING, then executes here in the background (the response does not wait
      // for it); a restart executes the new run here before answering, like StartRun with wait.
      const resumed = await abortable(deps.inline.track(() => engine.runResume({ runId, namespace, invalidate, execute: false, ...(drift ? { drift } : {}) })), ctx.signal);
      if (drift === undefined) deps.inline.kick(runId, namespace);
      const restartedAs = resumed.restartedAs ? (resumed.execution?.run ?? resumed.restartedAs) : null;
      return { run: runToProto(resumed.run), ...(restartedAs ? { restartedAs: runToProto(restartedAs) } : {}) };
    },

    async cancelRun(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      const reason = c.text('reason', req.reason, { max: 1024 });
      c.done();
      const { run } = await engine.runCancel({ runId, namespace, ...(reason ? { reason } : {}) });
      return { run: runToProto(run) };
    },

    async listWorkflows(req) {
      const c = check();
      c.namespace(req.namespace);
      c.done();
      return { workflows: engine.registry.workflows().map(workflowToProto) };
    },

    async getRunProvenance(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      c.done();
      return { provenance: runProvenanceToProto(await runProvenance({ store, runId, namespace })) };
    },
  };
}

/** The served RunService: every route, with its errors mapped (error-mapping.ts). */
export function runService(deps: ApiDeps): ServiceImpl<typeof RunService> {
  return withErrorMapping(RunService, runServiceImpl(deps), deps.logger);
}

/**
 * Registers waymark.v1.RunService. Methods missing from `impl` answer UNIMPLEMENTED, so transport
 * tests can serve one RPC; the composition root passes `runService(deps)`.
 */
export function registerRunService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof RunService>> = {}): void {
  router.service(RunService, { ...unimplemented(RunService), ...impl });
}
