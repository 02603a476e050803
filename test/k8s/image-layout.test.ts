import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { dockerignoreIncludes, filesUnder, layOutImage, type ImageLayout } from './image-layout.js';

/*
 * What the image would hold, without a Docker engine: the Dockerfile's stages played into folders
 * (image-layout.ts: the build stage really runs scripts/build.js and Vite on what it was copied),
 * then the compiled server started from the final stage's WORKDIR with the image's ENV, as the
 * ENTRYPOINT would, and asked for the web console (docs/console.md). Without the console's build
 * stage and its COPY, /console/ answers 503 there.
 */

const TIMEOUT = 240_000;
let dir: string;
let image: ImageLayout;
let db: TestDatabase;
let server: WaymarkProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'waymark-image-'));
  image = layOutImage({ dockerfile: readFileSync('Dockerfile', 'utf8'), dockerignore: readFileSync('.dockerignore', 'utf8'), context: process.cwd(), into: dir });
  db = await createTestDatabase('waymark_image');
}, TIMEOUT);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, TIMEOUT);

describe('the image laid out from the Dockerfile', () => {
  it('holds the built console and no console sources', () => {
    const built = filesUnder(path.join(image.workdir, 'console', 'dist'));
    expect(built).toContain('index.html');
    expect(built.some((f) => /^assets\/index-[\w-]+\.js$/.test(f))).toBe(true);
    expect(existsSync(path.join(image.workdir, 'console', 'src'))).toBe(false);
    expect(existsSync(path.join(image.workdir, 'dist', 'src', 'cli', 'main.js'))).toBe(true);
  });

  it('serves /console/ and its script from the compiled server run where the image puts it', { timeout: TIMEOUT }, async () => {
    server = WaymarkProcess.start(['server'], {
      bin: path.join(image.workdir, 'bin', 'waymark.js'),
      cwd: image.workdir,
      env: { ...image.env, DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_METRICS_ADDR: '127.0.0.1:0' },
    });
    const base = `http://${await server.listening()}`;
    const page = await fetch(`${base}/console/`);
    const html = await page.text();
    expect(page.status, html).toBe(200);
    const script = /<script type="module"[^>]* src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const js = await fetch(`${base}${script}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await js.text()).length).toBeGreaterThan(10_000);
    // A deep link answers the same page (the SPA fallback), as in a checkout.
    expect((await fetch(`${base}/console/runs/018f0000-0000-7000-8000-000000000000`)).status).toBe(200);
  });
});

describe('.dockerignore as the layout reads it', () => {
  it('takes the last matching line, covers folders, and re-includes with !', () => {
    const includes = dockerignoreIncludes(readFileSync('.dockerignore', 'utf8'));
    expect(includes('console/src/main.ts')).toBe(true);
    expect(includes('console/dist/index.html')).toBe(false);
    expect(includes('src/cli/main.ts')).toBe(true);
    expect(includes('src/cli/main.test.ts')).toBe(false);
    expect(includes('.waymark/local-admin-key')).toBe(false);
    expect(includes('node_modules/pg/package.json')).toBe(false);
  });
});
