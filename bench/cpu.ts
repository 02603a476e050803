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

/** Starts a measurement window; the function it returns gives the CPU ms spent since then. */
export type CpuWindow = () => () => number;

/** A window that measures nothing (NaN): where a process's CPU cannot be read. */
export const noCpu: CpuWindow = () => () => NaN;

/**
 * CPU windows over the PostgreSQL server behind `url` (its postmaster and every child: backends,
 * WAL writer, checkpointer), when it runs on this machine; otherwise `noCpu`. A process that exits
 * within a window (a pool closing an idle connection) takes its time in the window with it, and
 * one that exited before does not subtract from it: each process's time is taken as a difference.
 */
export async function postgresCpu(url: string): Promise<CpuWindow> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  let ppid: string | undefined;
  try {
    const backend = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    // Read while this connection (so its backend) is still open.
    ppid = stat(backend)?.[1];
  } finally {
    await c.end();
  }
  if (ppid === undefined) return noCpu;
  const postmaster = Number(ppid);
  const read = (): Map<number, number> => {
    const byPid = new Map<number, number>([[postmaster, processCpuMs(postmaster)]]);
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      const f = stat(Number(name));
      if (f && Number(f[1]) === postmaster) byPid.set(Number(name), ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND);
    }
    return byPid;
  };
  return () => {
    const before = read();
    return () => {
      let total = 0;
      for (const [pid, ms] of read()) total += ms - (before.get(pid) ?? 0);
      return total;
    };
  };
}
