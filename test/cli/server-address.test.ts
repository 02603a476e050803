import { describe, expect, it } from 'vitest';
import { WaymarkProcess } from '../support/waymark-process.js';

// The server reads WAYMARK_ADDRESS, the clients' name for its address, as WAYMARK_ADDR
// (docs/configuration.md); WAYMARK_ADDR wins when both are set.

const memory = { DATABASE_URL: 'memory:', WAYMARK_ADDR: undefined, WAYMARK_ADDRESS: undefined };

describe('the server address from WAYMARK_ADDRESS', () => {
  it('listens where WAYMARK_ADDRESS says when WAYMARK_ADDR is unset', async () => {
    const p = WaymarkProcess.start(['dev'], { env: { ...memory, WAYMARK_ADDRESS: '127.0.0.1:0' } });
    try {
      const address = await p.listening();
      expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(address).not.toBe('127.0.0.1:50051'); // port 0: an ephemeral port, not the default
    } finally {
      expect((await p.stop('SIGTERM')).code).toBe(0);
    }
  });

  it('takes WAYMARK_ADDR when both are set', async () => {
    const p = WaymarkProcess.start(['dev'], { env: { ...memory, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_ADDRESS: '127.0.0.1:1' } });
    try {
      expect(await p.listening()).not.toBe('127.0.0.1:1');
    } finally {
      expect((await p.stop('SIGTERM')).code).toBe(0);
    }
  });

  it('refuses a WAYMARK_ADDRESS that is not host:port with one line naming it, exit 78', async () => {
    const p = WaymarkProcess.start(['server'], { env: { ...memory, WAYMARK_ADDRESS: 'nonsense' } });
    expect((await p.exited).code).toBe(78);
    expect(p.stderr.trim().split('\n')).toEqual([expect.stringContaining('WAYMARK_ADDRESS="nonsense": must be host:port')]);
  });
});
