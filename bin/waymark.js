#!/usr/bin/env node
// The `waymark` command. Sources are TypeScript run through tsx, which also lets
// `--workflows ./workflows.ts` load a user's TypeScript module without a build step
// (src/engine/user-module.ts relies on this registration rather than making its own).
import { register as registerHooks } from 'node:module';
import { register } from 'tsx/esm/api';

register();
globalThis[Symbol.for('waymark.tsx-registered')] = true;
// Registered after tsx, so it runs first: the client package resolves to its sources (see the file).
registerHooks('./source-condition.js', import.meta.url);
await import('../src/cli/main.ts');
