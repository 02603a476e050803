import { memoryKind } from './memory/memory-kind.js';
import { postgresKind } from './postgres/postgres-kind.js';
import type { OpenedStore, StoreKind, StoreOptions } from './store-kind.js';

/**
 * The store kinds this build can open, each a folder under src/store/ exporting a StoreKind.
 * A new kind is one folder, one line here, and one conformance test file (CONTRIBUTING.md).
 */
export const STORE_KINDS: readonly StoreKind[] = [postgresKind, memoryKind];

/** A URL no store kind of this build opens. */
export class UnknownStoreError extends Error {
  constructor(readonly scheme: string) {
    super(`no store opens "${scheme}" URLs; expected ${storeUrlExamples()}`);
  }
}

/** The kind a URL's scheme picks, or null; never echoes the URL (it may hold a password). */
export function storeKindFor(url: string): StoreKind | null {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0].toLowerCase();
  return scheme === undefined ? null : STORE_KINDS.find((k) => k.schemes.includes(scheme)) ?? null;
}

/** "a postgres:// URL, or memory: (…)": what configuration error messages say is expected. */
export function storeUrlExamples(): string {
  return STORE_KINDS.map((k) => k.expects).join(', or ');
}

/**
 * The composition root's one way to a store: picks the kind from the URL's scheme, opens it
 * (StoreUnavailableError when it does not answer) and returns it with its admin side. The caller
 * migrates through `admin`, and closes everything with `admin.close()`.
 */
export async function openStore(options: StoreOptions): Promise<OpenedStore> {
  const kind = storeKindFor(options.url);
  if (!kind) throw new UnknownStoreError(/^[^:/]*:?/.exec(options.url)?.[0] ?? '');
  return kind.open(options);
}
