#!/usr/bin/env node
// The `waymark` command. Sources are TypeScript run through tsx, which also lets
// `--workflows ./workflows.ts` load a user's TypeScript module without a build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
