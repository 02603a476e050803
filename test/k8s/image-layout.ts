import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { parseDockerfile, stageEnv } from './dockerfile-policy.js';

/*
 * The image's files without a Docker engine: each stage of the Dockerfile played into a folder of
 * its own, instruction by instruction. COPY copies from the build context (through .dockerignore)
 * or from an earlier stage's folder; WORKDIR moves; RUN runs with `sh` in the stage's folder, so
 * the build stage really builds (scripts/build.js, Vite) from only what it was given. Two stand-ins:
 * a RUN with `npm ci` links the context's own node_modules (what `npm install` already put there)
 * instead of installing again, and the final stage's RUNs (its user and the PATH link) are skipped,
 * since the test runs bin/waymark.js itself, as test/topology/ does for the image's ENTRYPOINT.
 */

export interface ImageLayout {
  /** The final stage's WORKDIR, laid out on disk. */
  workdir: string;
  /** The final stage's ENV. */
  env: Record<string, string>;
}

/** .dockerignore as a predicate on context paths: the last matching line wins, `!` lines re-include. */
export function dockerignoreIncludes(text: string): (relativePath: string) => boolean {
  const rules = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')).map((l) => {
    const include = l.startsWith('!');
    const pattern = (include ? l.slice(1) : l).replace(/^\/|\/$/g, '');
    const source = pattern.split(/(\*\*\/|\*\*|\*|\?)/).map((part) => {
      if (part === '**/') return '(?:.*/)?';
      if (part === '**') return '.*';
      if (part === '*') return '[^/]*';
      if (part === '?') return '[^/]';
      return part.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }).join('');
    return { include, re: new RegExp(`^${source}$`) };
  });
  return (relativePath) => {
    const parts = relativePath.split(path.sep).filter(Boolean);
    // A line naming a folder covers everything inside it.
    const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let included = true;
    for (const rule of rules) if (prefixes.some((p) => rule.re.test(p))) included = rule.include;
    return included;
  };
}

/** Lays out every stage of `dockerfile` under `into`, the build context being `context`. */
export function layOutImage(options: { dockerfile: string; dockerignore: string; context: string; into: string }): ImageLayout {
  const { stages } = parseDockerfile(options.dockerfile);
  const included = dockerignoreIncludes(options.dockerignore);
  const roots = new Map<string, string>();
  let workdir = '/';
  let root = '';
  stages.forEach((stage, index) => {
    root = path.join(options.into, `stage-${index}`);
    mkdirSync(root, { recursive: true });
    if (stage.name) roots.set(stage.name, root);
    workdir = '/';
    const final = index === stages.length - 1;
    const inStage = (p: string) => path.join(root, path.isAbsolute(p) ? p : path.join(workdir, p));
    for (const ins of stage.instructions) {
      if (ins.keyword === 'WORKDIR') {
        workdir = path.posix.resolve(workdir, ins.args);
        mkdirSync(inStage('.'), { recursive: true });
      } else if (ins.keyword === 'COPY') {
        const words = ins.args.split(/\s+/);
        const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
        const rest = words.filter((w) => !w.startsWith('--'));
        const dest = rest.pop()!;
        for (const source of rest) {
          let src: string;
          if (from) {
            const fromRoot = roots.get(from);
            if (!fromRoot) throw new Error(`line ${ins.line}: COPY --from=${from}: no earlier stage of that name`);
            src = path.join(fromRoot, source);
          } else {
            src = path.join(options.context, source);
          }
          if (!lstatExists(src)) throw new Error(`line ${ins.line}: COPY ${source}: not there (${src})`);
          const target = dest.endsWith('/') && !lstatSync(src).isDirectory() ? path.join(inStage(dest), path.basename(source)) : inStage(dest);
          mkdirSync(path.dirname(target), { recursive: true });
          cpSync(src, target, {
            recursive: true,
            filter: from ? () => true : (file) => included(path.relative(options.context, file)),
          });
        }
      } else if (ins.keyword === 'RUN') {
        if (/\bnpm ci\b/.test(ins.args)) {
          const modules = inStage('node_modules');
          if (!existsSync(modules)) symlinkSync(path.join(options.context, 'node_modules'), modules, 'dir');
        } else if (!final) {
          const run = spawnSync('sh', ['-c', ins.args], { cwd: inStage('.'), encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
          if (run.status !== 0) throw new Error(`line ${ins.line}: RUN ${ins.args} failed (${run.status}):\n${run.stdout}\n${run.stderr}`);
        }
      }
    }
  });
  return { workdir: path.join(root, workdir), env: stageEnv(stages.at(-1)!) };
}

function lstatExists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/** Every file under `dir`, relative to it (links not followed). */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}
