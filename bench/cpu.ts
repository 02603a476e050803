// CPU time of the processes a bench row involves, from /proc (Linux; NaN elsewhere): what each of
// the processes sharing the machine's cores spent per run, so a row says which one it was limited by.
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

const TICKS_PER_SECOND = 100; // USER_HZ; the kernel reports utime and stime in it on every Linux this runs on

function stat(pid: number): string[] | null {
  try {
    // Fields after the command (which may hold spaces), from the state on: state is [0], ppid [1], utime [11], stime [12].
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)!.split(' ');
  } catch {
    return null;
  }
}

/** User plus system CPU time of `pid` so far, in ms; NaN when it cannot be read. */
export function processCpuMs(pid: number): number {
  const f = stat(pid);
  return f ? ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND : NaN;
}

/**
 * A reader of the CPU time of the PostgreSQL server behind `url` (its postmaster and every child:
 * backends, WAL writer, checkpointer), when it runs on this machine; otherwise one that returns NaN.
 * Backends that exit between two readings take their time with them: read while the measured
 * clients stay connected.
 */
export async function postgresCpu(url: string): Promise<() => number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  let backend: number;
  try {
    backend = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  } finally {
    await c.end();
  }
  const ppid = stat(backend)?.[1];
  if (ppid === undefined) return () => NaN;
  const postmaster = Number(ppid);
  return () => {
    let total = processCpuMs(postmaster);
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      const f = stat(Number(name));
      if (f && Number(f[1]) === postmaster) total += ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND;
    }
    return total;
  };
}
