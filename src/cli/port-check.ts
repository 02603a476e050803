import { createServer } from 'node:net';

/*
 * The addresses a process will listen on, tried before it starts anything: a busy port found
 * after the embedded PostgreSQL started, migrations ran and a key was written would leave all of
 * that behind for nothing (issue 30). A port another process takes in between is still refused
 * when the server binds; this makes the common case, a second `waymark dev`, one line up front.
 */

export interface ListenAddress {
  /** The setting that chooses it, which the message names (WAYMARK_ADDR, …). */
  setting: string;
  host: string;
  port: number;
}

/** One line saying which address cannot be listened on and what to change, or undefined when all can. */
export async function unusableAddress(addresses: ListenAddress[]): Promise<string | undefined> {
  for (const a of addresses) {
    if (a.port === 0) continue;
    const code = await tryListen(a.host, a.port);
    if (code === undefined) continue;
    const shown = a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
    const why = code === 'EADDRINUSE' ? 'is already in use (another waymark on this machine?)' : `cannot be listened on (${code})`;
    return `${shown} (${a.setting}) ${why}; stop that process, or set ${a.setting} to a free HOST:PORT (port 0 picks one). Nothing was started`;
  }
  return undefined;
}

/** The error code of listening on host:port, or undefined when it could (the port is released again). */
function tryListen(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}
