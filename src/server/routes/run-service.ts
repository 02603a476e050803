import { durationMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { isTerminalStatus } from '../../journal/run.js';
import type { ConnectRouter, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { DriftRecovery, RunService, WaitFor } from '../../gen/waymark/v1/run_service_pb.js';
import type { RouteDeps } from './route-deps.js';
import { entryToProto } from '../convert/convert-journal.js';
import { previewToProto } from '../convert/convert-preview.js';
import { comparisonToProto, forkPreviewToProto } from '../convert/convert-fork.js';
import { runProvenanceToProto } from '../convert/convert-provenance.js';
import { runStatusesFromProto, runToProto, waitingToProto, workflowToProto } from '../convert/convert-run.js';
import { withErrorMapping } from '../errors/error-mapping.js';
import { PAGE_SIZES, RequestCheck } from '../convert/request-validation.js';
import { streamRunEvents } from './run-events-stream.js';
import { PURGE_DEFAULTS, STREAM_TOKEN_DEFAULTS, type WaitFor as EngineWaitFor } from '../../engine/index.js';
import { RunNotFoundError, StreamTokensDisabledError } from '../../journal/errors.js';
import { abortable } from '../transport/shutdown-signal.js';
import { unimplemented } from './unimplemented.js';

/*
 * waymark.v1.RunService: each route validates (request-validation.ts), converts (convert-*.ts) and
 * makes one call to the engine (engine/replica-engine.ts); error-mapping.ts turns what it throws into
 * statuses.
 */

/** StartRun's wait_for, as the engine names it (UNSPECIFIED: `wait` decides). */
const WAIT_FOR: Partial<Record<WaitFor, EngineWaitFor>> = {
  [WaitFor.FIRST_PARK]: 'first_park', [WaitFor.OUTSIDE_INPUT]: 'outside_input', [WaitFor.END]: 'end',
};

export function runServiceImpl(deps: RouteDeps): ServiceImpl<typeof RunService> {
  const { api } = deps;
  const check = () => new RequestCheck(deps.defaultNamespace);

  return {
    async startRun(req, ctx: HandlerContext) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const workflowName = c.workflow('workflow', req.workflow);
      const idempotencyKey = c.key('idempotency_key', req.idempotencyKey);
      const labels = c.labels('labels', req.labels);
      if (req.budgetUsd !== undefined && !(Number.isFinite(req.budgetUsd) && req.budgetUsd >= 0)) c.fail('budget_usd', 'must be a finite number >= 0');
      const timeoutMs = c.runTimeout('timeout', req.timeout);
      const input = c.json('input', req.input);
      const waitFor = WAIT_FOR[req.waitFor];
      if (req.waitFor !== WaitFor.UNSPECIFIED && waitFor === undefined) c.fail('wait_for', `unknown value ${req.waitFor}; expected FIRST_PARK, OUTSIDE_INPUT or END`);
      c.done();
      c.payload('input', input);
      const deadlineMs = ctx.timeoutMs();
      const { run, created, waitingOn, waitComplete } = await abortable(api.runStart({
        namespace, workflowName, input, labels, idempotencyKey: idempotencyKey || null, budgetUsd: req.budgetUsd ?? null,
        dryRun: req.dryRun, wait: req.wait, timeoutMs, ...(waitFor ? { waitFor } : {}), ...(deadlineMs !== undefined ? { deadlineMs } : {}),
      }, ctx.signal), ctx.signal);
      return { run: runToProto(run), created, waitingOn: waitingOn.map(waitingToProto), waitComplete };
    },

    async getRun(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      c.done();
      // The spend budgets count: the run's own model calls and its children's, folded from the journal.
      const { run, spentUsd, waitingOn, forks } = await api.runGet({ runId, namespace });
      return { run: runToProto(run, spentUsd, deps.limits), waitingOn: waitingOn.map(waitingToProto), forks };
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
      c.done();
      const page = await api.runList({
        namespace, pageSize, pageToken: req.pageToken, labels,
        // A filter of UNSPECIFIED only matches nothing (the proto says so): an empty status list.
        ...(req.statuses.length > 0 ? { statuses } : {}), ...(workflowName ? { workflowName } : {}), ...(parentRunId ? { parentRunId } : {}),
      });
      return { runs: page.runs.map(({ run, spentUsd }) => runToProto(run, spentUsd, deps.limits)), nextPageToken: page.nextPageToken };
    },

    async getJournal(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      const afterSeq = c.afterSeq('after_seq', req.afterSeq);
      const pageSize = c.pageSize('page_size', req.pageSize, PAGE_SIZES.journal);
      c.done();
      const page = await api.journalPage({ runId, namespace, afterSeq, pageSize, pageToken: req.pageToken, includeLargePayloads: req.includeLargePayloads });
      return { entries: page.entries.map(entryToProto), nextPageToken: page.nextPageToken };
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
        const { run, preview } = await api.runPreview({ runId, namespace, invalidate });
        return { run: runToProto(run), preview: previewToProto(preview) };
      }
      // The run becomes PENDING, then executes here in the background (the response does not wait
      // for it); a restart executes the new run here before answering, like StartRun with wait.
      const { run, restartedAs } = await abortable(api.runResume({ runId, namespace, invalidate, ...(drift ? { drift } : {}) }), ctx.signal);
      return { run: runToProto(run), ...(restartedAs ? { restartedAs: runToProto(restartedAs) } : {}) };
    },

    async cancelRun(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      const reason = c.text('reason', req.reason, { max: 1024 });
      c.done();
      const { run } = await api.runCancel({ runId, namespace, ...(reason ? { reason } : {}) });
      return { run: runToProto(run) };
    },

    async listWorkflows(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      c.done();
      return { workflows: (await api.workflows({ namespace })).map(({ workflow, replicas }) => workflowToProto(workflow, replicas)) };
    },

    async getRunProvenance(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      c.done();
      return { provenance: runProvenanceToProto(await api.runProvenance({ runId, namespace })) };
    },

    async forkRun(req, ctx: HandlerContext) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const sourceRunId = c.runId('run_id', req.runId);
      if (req.atSeq < 0n || req.atSeq > 2_147_483_647n) c.fail('at_seq', 'must be the seq of an entry of the run');
      const input = req.input === undefined ? undefined : c.json('input', req.input);
      const workflowVersion = c.key('workflow_version', req.workflowVersion);
      const model = c.key('model', req.model);
      const idempotencyKey = c.key('idempotency_key', req.idempotencyKey);
      const labels = c.labels('labels', req.labels);
      const comment = req.decision ? c.text('decision.comment', req.decision.comment) : '';
      const by = req.decision ? c.text('decision.by', req.decision.by, { max: 200 }) : '';
      if (req.budgetUsd !== undefined && !(Number.isFinite(req.budgetUsd) && req.budgetUsd >= 0)) c.fail('budget_usd', 'must be a finite number >= 0');
      if (req.dryRun && req.wait) c.fail('wait', 'cannot be combined with dry_run');
      c.done();
      if (input !== undefined) c.payload('input', input);
      const fork = {
        namespace, sourceRunId, at: Number(req.atSeq), labels, idempotencyKey: idempotencyKey || null,
        ...(input !== undefined ? { input } : {}), ...(workflowVersion ? { workflowVersion } : {}), ...(model ? { model } : {}),
        ...(req.budgetUsd !== undefined ? { budgetUsd: req.budgetUsd } : {}),
        ...(req.decision ? { decision: { approve: req.decision.approve, by: by || 'fork', comment: comment || null } } : {}),
      };
      if (req.dryRun) {
        const preview = await api.runForkPreview(fork);
        return { created: false, forkSeq: BigInt(preview.forkSeq), preview: forkPreviewToProto(preview) };
      }
      const { run, created, forkSeq, waitingOn } = await abortable(api.runFork({ ...fork, wait: req.wait }), ctx.signal);
      return { run: runToProto(run), created, forkSeq: BigInt(forkSeq), waitingOn: waitingOn.map(waitingToProto) };
    },

    async compareRuns(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runIdA = c.runId('run_id_a', req.runIdA);
      const runIdB = c.runId('run_id_b', req.runIdB);
      c.done();
      return comparisonToProto(await api.runCompare({ namespace, runIdA, runIdB }));
    },

    async purgeRuns(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      if (!req.olderThan) c.fail('older_than', 'is required: how long ago a run must have ended to go ("0s" for every finished run)');
      const olderThanMs = req.olderThan ? durationMs(req.olderThan) : 0;
      // Bounded: a horizon past the calendar the database keeps failed as INTERNAL (the message fuzzer found it).
      if (!(olderThanMs >= 0)) c.fail('older_than', 'must not be negative');
      else if (!(olderThanMs <= PURGE_DEFAULTS.maxOlderThanMs)) c.fail('older_than', `must be at most ${PURGE_DEFAULTS.maxOlderThanMs / 86_400_000} days`);
      const { statuses, invalid } = runStatusesFromProto(req.statuses);
      if (invalid.length) c.fail('statuses', `unknown status values ${invalid.join(', ')}`);
      const live = statuses.filter((s) => !isTerminalStatus(s));
      if (live.length) c.fail('statuses', `only finished runs are purged: ${live.join(', ')} is not SUCCEEDED, FAILED or CANCELLED`);
      const workflowName = c.workflow('workflow', req.workflow, { required: false });
      if (!(req.limit >= 0 && req.limit <= PURGE_DEFAULTS.maxLimit)) c.fail('limit', `must be 0 (${PURGE_DEFAULTS.limit}) to ${PURGE_DEFAULTS.maxLimit}`);
      c.done();
      const r = await api.runPurge({
        namespace, olderThanMs: Math.floor(olderThanMs), dryRun: req.dryRun, limit: req.limit || PURGE_DEFAULTS.limit,
        ...(statuses.length ? { statuses } : {}), ...(workflowName ? { workflowName } : {}),
      });
      return {
        dryRun: r.dryRun, rootRuns: BigInt(r.rootRuns), runs: BigInt(r.runs), entries: BigInt(r.entries), more: r.more,
        ...(r.oldestEnd ? { oldestEndTime: timestampFromDate(r.oldestEnd) } : {}), ...(r.newestEnd ? { newestEndTime: timestampFromDate(r.newestEnd) } : {}),
      };
    },

    async createStreamToken(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      const ttlMs = req.ttl ? durationMs(req.ttl) : STREAM_TOKEN_DEFAULTS.ttlMs;
      if (!(ttlMs > 0 && ttlMs <= STREAM_TOKEN_DEFAULTS.maxTtlMs)) c.fail('ttl', `must be more than 0 and at most ${STREAM_TOKEN_DEFAULTS.maxTtlMs / 60_000} minutes`);
      c.done();
      if (!deps.streamTokens) throw new StreamTokensDisabledError();
      // A token is minted only for a run the caller can see: another namespace's run is NOT_FOUND.
      if (!(await api.runVisible({ runId, namespace }))) throw new RunNotFoundError(runId);
      const { token, expiresAt } = deps.streamTokens.mint({ namespace, runId, ttlMs: Math.round(ttlMs) });
      return { token, expireTime: timestampFromDate(expiresAt) };
    },
  };
}

/** The served RunService: every route, with its errors mapped (error-mapping.ts). */
export function runService(deps: RouteDeps): ServiceImpl<typeof RunService> {
  return withErrorMapping(RunService, runServiceImpl(deps), deps.logger);
}

/**
 * Registers waymark.v1.RunService. Methods missing from `impl` answer UNIMPLEMENTED, so transport
 * tests can serve one RPC; the composition root passes `runService(deps)`.
 */
export function registerRunService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof RunService>> = {}): void {
  router.service(RunService, { ...unimplemented(RunService), ...impl });
}
