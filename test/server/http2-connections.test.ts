import { readdirSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { Health, HealthCheckResponse_ServingStatus } from '../../src/gen/grpc/health/v1/health_pb.js';
import { CONNECTION_ERRORS, PREFACE, SETTINGS } from './h2-frames.js';
import { grpcJsClient, unaryCall } from './grpc-js-client.js';

/*
 * Issue 16, finding 2: a connection that sends invalid HPACK or an oversized frame header got a
 * GOAWAY, but its socket stayed open for good (CLOSE-WAIT once the client closed, ESTABLISHED if it
 * did not). Against a real `waymark server` process, its open sockets counted in /proc/<pid>/fd.
 */

const TIMEOUT = 90_000;
let db: TestDatabase;
let server: WaymarkProcess;
let address: string;

beforeAll(async () => {
  db = await createTestDatabase('waymark_h2conn');
  server = WaymarkProcess.start(['server'], {
    env: {
      DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0',
      // Short, so the test waits seconds; the defaults are 30 s and 10 s (docs/configuration.md).
      WAYMARK_HTTP2_KEEPALIVE_MS: '250', WAYMARK_HTTP2_PING_TIMEOUT_MS: '500',
    },
  });
  address = await server.listening();
}, TIMEOUT);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
}, TIMEOUT);

/** The sockets the server process holds open (listeners, Postgres connections, clients). */
function openSockets(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      // closed while we looked
    }
  }
  return n;
}

function descriptors(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

async function abuse(payload: Buffer, count: number, closeAfter: boolean): Promise<net.Socket[]> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  return Promise.all(Array.from({ length: count }, () => new Promise<net.Socket>((resolve) => {
    const socket = net.connect(port, host, () => socket.write(Buffer.concat([PREFACE, SETTINGS, payload])));
    // The server answered (its SETTINGS, then a GOAWAY): it holds the connection.
    socket.once('data', () => {
      if (closeAfter) socket.end();
      resolve(socket);
    });
    socket.on('error', () => {});
  })));
}

describe('sockets after HTTP/2 connection errors (issue 16, finding 2)', () => {
  for (const [what, payload] of Object.entries(CONNECTION_ERRORS)) {
    it(`50 connections sending ${what}, half of them then closed by the client: the server's sockets and descriptors return to baseline`, { timeout: TIMEOUT }, async () => {
      const pid = server.child.pid!;
      const client = grpcJsClient(address);
      // Baseline with the server warm (its Postgres pool and a client connection open).
      expect((await unaryCall(client, Health.method.check, {})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      const baseSockets = openSockets(pid);
      const baseFds = descriptors(pid);
      const sockets = [...await abuse(payload, 25, true), ...await abuse(payload, 25, false)];
      await vi.waitFor(() => {
        expect(openSockets(pid)).toBeLessThanOrEqual(baseSockets);
        expect(descriptors(pid)).toBeLessThanOrEqual(baseFds);
      }, { timeout: 15_000, interval: 200 });
      // The server still serves, on the connection it already had.
      expect((await unaryCall(client, Health.method.check, {})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      for (const s of sockets) s.destroy();
      client.close();
    });
  }
});
