#!/usr/bin/env node
// The `waymark` command. It runs the compiled JavaScript in dist/ (scripts/build.js, run by
// `npm install` and `npm run build`), with no TypeScript compiler loaded: tsx is registered only
// when a user's `--workflows` module needs it (src/engine/user-module.ts).
//
// A checkout with no dist/ (installed with --ignore-scripts), or WAYMARK_FROM_SOURCE=1, runs the
// TypeScript sources through tsx instead, as the command did before it was compiled.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const compiled = new URL('../dist/src/cli/main.js', import.meta.url);
if (process.env.WAYMARK_FROM_SOURCE !== '1' && existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register: registerHooks } = await import('node:module');
  const { register } = await import('tsx/esm/api');
  register();
  // user-module.ts relies on this registration for a user's TypeScript rather than making its own.
  globalThis[Symbol.for('waymark.tsx-registered')] = true;
  // Registered after tsx, so it runs first: the client package resolves to its sources (see the file).
  registerHooks('./source-condition.js', import.meta.url);
  await import('../src/cli/main.ts');
}
