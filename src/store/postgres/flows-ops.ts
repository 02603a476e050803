import type { FlowGetParams, FlowListParams, FlowRecord, FlowRegisterParams, FlowRegisterResult } from '../flow-params.js';
import * as fq from './flows-queries.js';
import type { PgAccess } from './pg-access.js';
import { sqlState } from './pg-errors.js';

/* PostgresStore's declarative flows (FlowOps in flow-params.ts documents each). */

export async function flowRegister(db: PgAccess, params: FlowRegisterParams): Promise<FlowRegisterResult> {
  // A concurrent registration of the same name took the version this one computed: try again
  // (it then finds that version, or the next number). Bounded: each retry means another writer won.
  for (let attempt = 1; ; attempt++) {
    try {
      const row = (await db.query<fq.FlowRow>(fq.flowInsertNext(params))).rows[0];
      if (row) return { flow: fq.toFlow(row), created: true };
      const latest = (await db.query<fq.FlowRow>(fq.flowSelect({ namespace: params.namespace, name: params.name, version: null }))).rows[0];
      if (latest && latest.digest === params.digest) return { flow: fq.toFlow(latest), created: false };
    } catch (err) {
      if (sqlState(err) !== '23505' || attempt >= 10) throw err;
    }
  }
}

export async function flowGet(db: PgAccess, params: FlowGetParams): Promise<FlowRecord | null> {
  const row = (await db.query<fq.FlowRow>(fq.flowSelect({ namespace: params.namespace, name: params.name, version: params.version ?? null }))).rows[0];
  return row ? fq.toFlow(row) : null;
}

export async function flowList(db: PgAccess, params: FlowListParams): Promise<FlowRecord[]> {
  return (await db.query<fq.FlowRow>(fq.flowListLatest(params.namespace))).rows.map(fq.toFlow);
}
