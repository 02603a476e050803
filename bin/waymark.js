#!/usr/bin/env node
// The `waymark` command. Sources are TypeScript run through tsx, which also lets
// `--workflows ./workflows.ts` load a user's TypeScript module without a build step
// (src/engine/user-module.ts relies on this registration rather than making its own).
import { register } from 'tsx/esm/api';

register();
globalThis[Symbol.for('waymark.tsx-registered')] = true;
await import('../src/cli/main.ts');
