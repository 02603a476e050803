import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createWaymarkClient, type WaymarkClient } from '../../clients/ts/src/index.js';
import type { Scope } from '../../src/engine/access/api-keys.js';
import { createApiKey } from '../support/api-keys.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * What the console's browser tests run against: a real `waymark dev` process (server, sweeper and
 * the examples, on this test's own database, authentication on, the built console served under
 * /console/) with test/console/console-workflows.ts, restartable on the same address; API keys
 * created in its database; TypeScript clients to set up runs as an application would.
 */

export const CONSOLE_WORKFLOWS = path.resolve('test/console/console-workflows.ts');

export class ConsoleStack {
  address = '';
  adminKey = '';
  private process: WaymarkProcess | undefined;
  private readonly clients: WaymarkClient[] = [];
  private readonly dataDir = mkdtempSync(path.join(os.tmpdir(), 'waymark-console-dev-'));

  private constructor(readonly db: MigratedDatabase) {}

  static async start(prefix = 'waymark_console'): Promise<ConsoleStack> {
    const stack = new ConsoleStack(await createMigratedDatabase(prefix));
    stack.adminKey = (await createApiKey(stack.db.url, { name: 'console test admin' })).secret;
    await stack.spawn('127.0.0.1:0');
    return stack;
  }

  /** The console's URL. */
  get base(): string {
    return `http://${this.address}/console/`;
  }

  /** A key of one namespace with these scopes (default: read, write and decide). */
  async namespaceKey(namespace: string, scopes: Scope[] = ['runs:read', 'runs:write', 'approvals:decide', 'signals:send']): Promise<string> {
    return (await createApiKey(this.db.url, { namespace, scopes, name: `console test ${namespace}` })).secret;
  }

  client(options: { namespace?: string; token?: string } = {}): WaymarkClient {
    const c = createWaymarkClient({ address: this.address, token: options.token ?? this.adminKey, ...(options.namespace ? { namespace: options.namespace } : {}) });
    this.clients.push(c);
    return c;
  }

  /** Stops the process (SIGTERM: it drains) and starts a new one on the same address. */
  async restart(between?: () => Promise<void>): Promise<void> {
    await this.process?.stop('SIGTERM');
    await between?.();
    await this.spawn(this.address);
  }

  async stop(): Promise<void> {
    for (const c of this.clients) c.close();
    await this.process?.stop();
    await this.db.drop();
  }

  private async spawn(addr: string): Promise<void> {
    this.process = WaymarkProcess.start(['dev', '--workflows', CONSOLE_WORKFLOWS], {
      env: { DATABASE_URL: this.db.url, WAYMARK_ADDR: addr, WAYMARK_AUTH: 'on', WAYMARK_DATA_DIR: this.dataDir, WAYMARK_SWEEP_INTERVAL_MS: '200' },
    });
    this.address = await this.process.listening();
  }
}
