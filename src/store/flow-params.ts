import type { Json } from '../journal/run.js';

/*
 * Declarative flows as a store holds them (docs/flows.md): one row per (namespace, name, version),
 * the definition as JSON (the Flow message's JSON form) and the digest of its canonical content.
 * The store does not interpret the definition; the engine validated it before flowRegister.
 */

/** One stored version of a flow. */
export interface FlowRecord {
  namespace: string;
  name: string;
  /** 1 for the first registration of the name, then 2, ... */
  version: number;
  /** Hex sha256 of the definition's canonical JSON: what a run of it pins. */
  digest: string;
  definition: Json;
  createdAt: Date;
}

export interface FlowRegisterParams {
  namespace: string;
  name: string;
  digest: string;
  definition: Json;
}

export interface FlowRegisterResult {
  /** The new version, or the latest one when its digest is `digest` (nothing written). */
  flow: FlowRecord;
  created: boolean;
}

export interface FlowGetParams {
  namespace: string;
  name: string;
  /** Absent: the latest version. */
  version?: number;
}

export interface FlowListParams {
  namespace: string;
}
