/*
 * The Dockerfile rules hadolint does not cover (it cannot see through `ARG` in `FROM`, does not
 * know npm ci from npm install, and knows nothing of this project), checked on the text itself so
 * they run wherever the tests run. No Docker engine is needed: the image is never built here.
 * test/topology/ runs the image's ENTRYPOINT and ENV with the manifests' args as local processes.
 */

export interface Instruction {
  /** Upper-case keyword: FROM, RUN, COPY, ... */
  keyword: string;
  /** Everything after the keyword, continuation lines joined. */
  args: string;
  line: number;
}

export interface Stage {
  name: string | undefined;
  /** The base image with ARG defaults substituted. */
  image: string;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): { args: Record<string, string>; stages: Stage[] } {
  const instructions: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!;
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.trimEnd().endsWith('\\') && i + 1 < lines.length) {
      line = line.trimEnd().slice(0, -1) + ' ' + lines[++i]!.trim();
    }
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (m) instructions.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start + 1 });
  }
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'ARG' && stages.length === 0) {
      const [name, value] = ins.args.split('=', 2);
      if (value !== undefined) args[name!.trim()] = value.trim();
    } else if (ins.keyword === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      const image = (m?.[1] ?? ins.args).replace(/\$\{?(\w+)\}?/g, (_, name: string) => args[name] ?? '');
      stages.push({ name: m?.[2], image, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push(ins);
    }
  }
  return { args, stages };
}

/** ENV of a stage as a map (`ENV A=1 B=2` form). */
export function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const ins of stage.instructions.filter((i) => i.keyword === 'ENV')) {
    for (const m of ins.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) env[m[1]!] = m[2]!.replace(/^"|"$/g, '');
  }
  return env;
}

/** The final stage's ENTRYPOINT in exec form, or undefined when absent or in shell form. */
export function entrypoint(stage: Stage): string[] | undefined {
  const ins = stage.instructions.filter((i) => i.keyword === 'ENTRYPOINT').at(-1);
  if (!ins || !ins.args.startsWith('[')) return undefined;
  return JSON.parse(ins.args) as string[];
}

export function checkDockerfile(text: string, dockerignore: string, options: { nodeEngine: string }): string[] {
  const violations: string[] = [];
  const { stages } = parseDockerfile(text);
  if (stages.length < 2) violations.push('multi-stage build expected: dependencies installed in one stage, copied into the runtime stage');
  for (const stage of stages) {
    const image = stage.image;
    const isStage = stages.some((s) => s.name === image);
    if (isStage) continue;
    const tag = /:([^/:@]+)$/.exec(image.split('@')[0]!)?.[1];
    if (!image.includes('@sha256:') && (!tag || tag === 'latest' || !/\d/.test(tag))) {
      violations.push(`FROM ${image}: pin the base image to a version tag (not latest) or a digest`);
    }
    const node = /^node:(\d+)\.(\d+)\.(\d+)/.exec(image);
    const [minMajor, minMinor] = options.nodeEngine.replace(/^>=\s*/, '').split('.').map(Number);
    if (image.startsWith('node:') && (!node || Number(node[1]) < minMajor! || (Number(node[1]) === minMajor && Number(node[2]) < minMinor!))) {
      violations.push(`FROM ${image}: needs a full Node version tag satisfying engines ${options.nodeEngine}`);
    }
  }
  const all = stages.flatMap((s) => s.instructions);
  for (const ins of all.filter((i) => i.keyword === 'ADD')) {
    violations.push(`line ${ins.line}: use COPY, not ADD${/https?:\/\//.test(ins.args) ? ' (never ADD a URL: no checksum, no cache control)' : ''}`);
  }
  const runs = all.filter((i) => i.keyword === 'RUN').map((i) => i.args);
  if (!runs.some((r) => /\bnpm ci\b[^&;|]*--omit=dev/.test(r))) violations.push('dependencies must be installed with `npm ci --omit=dev` (the lockfile, no devDependencies)');
  if (runs.some((r) => /\bnpm (install|i)\b/.test(r))) violations.push('`npm install` in the image: use `npm ci` so the lockfile decides');
  if (runs.some((r) => /\b(curl|wget)\b/.test(r))) violations.push('the image must not download anything but npm packages');

  const final = stages.at(-1);
  if (final) {
    const user = final.instructions.filter((i) => i.keyword === 'USER').at(-1)?.args;
    const uid = user?.split(':')[0];
    if (!uid || !/^\d+$/.test(uid) || uid === '0') violations.push(`the final stage must end with a numeric non-root USER (runAsNonRoot verifies it), got ${user}`);
    const ep = entrypoint(final);
    if (!ep) violations.push('ENTRYPOINT must be in exec form (JSON array), so SIGTERM reaches waymark');
    else if (ep.length !== 1 || ep[0] !== 'waymark') violations.push(`ENTRYPOINT must be ["waymark"] (the package bin), got ${JSON.stringify(ep)}`);
    // The web console (docs/console.md) is served from console/dist beside package.json: a build stage
    // must make it and the final stage copy it, or /console/ answers 503 in the image.
    const copiesConsole = final.instructions.some((i) => i.keyword === 'COPY' && /--from=\S+/.test(i.args) && /\/console\/dist\/?\s+\.\/console\/dist\/?$/.test(i.args));
    const buildsConsole = stages.some((s) => s !== final && s.instructions.some((i) => i.keyword === 'RUN' && /\bnpm run build:console\b/.test(i.args)));
    if (!copiesConsole || !buildsConsole) violations.push('the web console must be built in a build stage (npm run build:console) and its console/dist copied into the final stage at ./console/dist');
    const env = stageEnv(final);
    if (env.TSX_DISABLE_CACHE !== '1') violations.push('TSX_DISABLE_CACHE=1 must be set: the tsx transform cache would write to a read-only root filesystem');
  }
  // Everything copied from the build context must get past .dockerignore (which allows by name).
  const allowed = dockerignore.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
  for (const ins of all.filter((i) => i.keyword === 'COPY' && !i.args.includes('--from='))) {
    const sources = ins.args.split(/\s+/).filter((a) => !a.startsWith('--')).slice(0, -1);
    for (const source of sources) {
      if (!allowed.includes(source.replace(/\/$/, ''))) violations.push(`line ${ins.line}: COPY ${source} is excluded by .dockerignore`);
    }
  }
  return violations;
}
