// Builds the Go worker example (clients/go/examples/worker) once per test file, for the tests that
// run it as a real worker process: remote-refund.test.ts and worker-shutdown.test.ts.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

/** Whether a Go toolchain is on the PATH; without one the Go cases skip. */
export const goAvailable = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;

/** The path of the built example in `dir`, or undefined without Go. Throws with go's output when the build fails. */
export function buildGoWorkerExample(dir: string): string | undefined {
  if (!goAvailable) return undefined;
  const binary = path.join(dir, 'worker-example');
  const built = spawnSync('go', ['build', '-o', binary, './examples/worker'], { cwd: path.resolve('clients', 'go'), encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`go build of the worker example failed:\n${built.stderr}`);
  return binary;
}
