import type { ModelDelta, ModelDeltaAppendParams, ModelDeltaListParams } from '../model-delta-params.js';
import * as dq from './model-deltas-queries.js';
import type { PgAccess } from './pg-access.js';

/* PostgresStore's model call deltas (ModelDeltaOps in model-delta-params.ts documents each). */

export async function modelDeltaAppend(db: PgAccess, params: ModelDeltaAppendParams): Promise<void> {
  if (params.deltas.length === 0) return;
  await db.query(dq.modelDeltaInsert(params));
}

export async function modelDeltaList(db: PgAccess, params: ModelDeltaListParams): Promise<ModelDelta[]> {
  return (await db.query<dq.ModelDeltaRow>(dq.modelDeltaSelect(params))).rows.map(dq.toModelDelta);
}

export async function modelDeltaSweep(db: PgAccess, params: { before: Date; limit: number }): Promise<number> {
  return (await db.query(dq.modelDeltaDeleteBefore(params.before, params.limit))).rowCount ?? 0;
}
