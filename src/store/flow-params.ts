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

/**
 * Declarative flows, versioned by name. Part of JournalStore (store.ts), whose contract holds for
 * each method.
 */
export interface FlowOps {
  /**
   * Stores a new version of a flow (the latest version's number plus one), unless the latest
   * version's digest is `digest`: then nothing is written and that version is returned with
   * `created: false`. Concurrent registrations of one name get distinct versions.
   */
  flowRegister(params: FlowRegisterParams): Promise<FlowRegisterResult>;
  /** One version (the latest without `version`); null when the name or version is unknown in the namespace. */
  flowGet(params: FlowGetParams): Promise<FlowRecord | null>;
  /** The latest version of each flow of the namespace, by name. */
  flowList(params: FlowListParams): Promise<FlowRecord[]>;
}
