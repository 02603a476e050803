import type { FlowGetParams, FlowListParams, FlowRecord, FlowRegisterParams, FlowRegisterResult } from '../store.js';

/*
 * The memory store's flows (docs/flows.md): the versions of each (namespace, name), oldest first,
 * as the `flows` table of migration 0012 holds them.
 */
export class MemoryFlows {
  private readonly versions = new Map<string, FlowRecord[]>();

  constructor(private readonly now: () => Date) {}

  flowRegister(params: FlowRegisterParams): FlowRegisterResult {
    const key = keyOf(params.namespace, params.name);
    const versions = this.versions.get(key) ?? [];
    const latest = versions.at(-1);
    if (latest && latest.digest === params.digest) return { flow: structuredClone(latest), created: false };
    const flow: FlowRecord = {
      namespace: params.namespace, name: params.name, version: (latest?.version ?? 0) + 1, digest: params.digest,
      definition: structuredClone(params.definition), createdAt: this.now(),
    };
    versions.push(flow);
    this.versions.set(key, versions);
    return { flow: structuredClone(flow), created: true };
  }

  flowGet(params: FlowGetParams): FlowRecord | null {
    const versions = this.versions.get(keyOf(params.namespace, params.name)) ?? [];
    const flow = params.version === undefined ? versions.at(-1) : versions.find((v) => v.version === params.version);
    return flow ? structuredClone(flow) : null;
  }

  flowList(params: FlowListParams): FlowRecord[] {
    return [...this.versions.values()]
      .map((versions) => versions.at(-1)!)
      .filter((f) => f.namespace === params.namespace)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((f) => structuredClone(f));
  }

  /** Whether `name` is a flow of `namespace` (routing: every replica serves flows). */
  isFlow(namespace: string, name: string): boolean {
    return this.versions.has(keyOf(namespace, name));
  }
}

function keyOf(namespace: string, name: string): string {
  return `${namespace}\u0000${name}`;
}
