import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalState, RunStatus, type RunEvent } from '../../src/gen/waymark/v1/run_pb.js';
import { RunService, type StreamRunEventsResponse } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { json, plain } from './api-harness.js';
import { grpcJsClient, serverStreamCall, unaryCall } from './grpc-js-client.js';

/*
 * DESIGN.md's refund, end to end over gRPC against real `waymark dev` processes: the run parks on
 * its approval, the server is killed (SIGKILL: no drain, no cleanup), a new one starts, a person
 * approves, and the refund reaches the payment provider exactly once. The provider is an HTTP
 * sink in this test process, outside the server, counting what it received by idempotency key.
 */

const TIMEOUT = 120_000;

class PaymentSink {
  readonly received: { key: string; body: unknown }[] = [];
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => {
        this.received.push({ key: String(req.headers['idempotency-key'] ?? ''), body: JSON.parse(body || 'null') as unknown });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/refunds`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

let db: TestDatabase;
const sink = new PaymentSink();
const processes: WaymarkProcess[] = [];
const clients: grpc.Client[] = [];

async function startDev(): Promise<grpc.Client> {
  const p = WaymarkProcess.start(['dev'], {
    env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_EXAMPLE_SINK_URL: sink.url },
  });
  processes.push(p);
  const client = grpcJsClient(await p.listening());
  clients.push(client);
  return client;
}

beforeAll(async () => {
  db = await createTestDatabase('waymark_refund');
  await sink.start();
}, TIMEOUT);

afterAll(async () => {
  for (const c of clients) c.close();
  for (const p of processes) await p.stop();
  await sink.stop();
  await db?.drop();
}, TIMEOUT);

describe('refund with approval, across a crash', () => {
  it('parks on the approval, survives SIGKILL, resumes on a new process when approved, refunds exactly once', { timeout: TIMEOUT }, async () => {
    const first = await startDev();
    const { workflows } = await unaryCall(first, RunService.method.listWorkflows, {});
    expect(workflows.map((w) => w.name)).toContain('refund');
    const started = await unaryCall(first, RunService.method.startRun, {
      workflow: 'refund', input: json({ order: 'o-42', amount: 99.5 }), wait: true, idempotencyKey: 'refund-o-42',
    }, 60_000);
    expect(started.run?.status).toBe(RunStatus.SUSPENDED);
    const approvalId = started.waitingOn[0]!.approvalId;
    expect(approvalId).toBe(`${started.run!.id}:${started.waitingOn[0]!.seq}`);

    expect((await processes[0]!.stop('SIGKILL')).signal).toBe('SIGKILL');

    const second = await startDev();
    const pending = await unaryCall(second, SignalService.method.listApprovals, {});
    expect(pending.approvals.map((a) => [a.id, ApprovalState[a.state]])).toEqual([[approvalId, 'PENDING']]);
    const decided = await unaryCall(second, SignalService.method.decideApproval, {
      id: approvalId, approve: true, by: 'ann@example.com', comment: 'receipt checked', requestId: 'decision-1',
    });
    expect(decided).toMatchObject({ applied: true, approval: { state: ApprovalState.APPROVED, decidedBy: 'ann@example.com' } });

    // Follow the run to its end.
    const events: RunEvent[] = [];
    const reader = serverStreamCall(second, RunService.method.streamRunEvents, { runId: started.run!.id, followSuspended: true });
    for (;;) {
      let message: StreamRunEventsResponse;
      try {
        message = await reader.next();
      } catch {
        break;
      }
      events.push(message.event!);
    }
    expect((await reader.status).code).toBe(grpc.status.OK);
    const last = events[events.length - 1]!;
    expect(last.body.case === 'statusChanged' && RunStatus[last.body.value.status]).toBe('SUCCEEDED');
    const output = last.body.case === 'statusChanged' ? plain(last.body.value.output) as { status: string; refundId: string } : null;
    expect(output?.status).toBe('refunded');

    // Exactly once, with the effect's idempotency key, as the provider saw it.
    const journal = await unaryCall(second, RunService.method.getJournal, { runId: started.run!.id });
    const intent = journal.entries.find((e) => e.kind === 'tool' && e.name === 'charge_back' && e.status === 1)!;
    expect(sink.received).toEqual([{ key: intent.idempotencyKey, body: { order: 'o-42', amount: 99.5 } }]);
    expect(output?.refundId).toBe(`rf_${intent.idempotencyKey.slice(-16)}`);

    // A late or repeated decision changes nothing.
    const late = await unaryCall(second, SignalService.method.decideApproval, { id: approvalId, approve: false, by: 'bob', requestId: 'decision-2' });
    expect(late).toMatchObject({ applied: false, reason: 'already_resolved', approval: { state: ApprovalState.APPROVED } });
    const again = await unaryCall(second, RunService.method.startRun, {
      workflow: 'refund', input: json({ order: 'o-42', amount: 99.5 }), wait: true, idempotencyKey: 'refund-o-42',
    });
    expect(again).toMatchObject({ created: false, run: { id: started.run!.id, status: RunStatus.SUCCEEDED } });
    expect(sink.received).toHaveLength(1);
  });
});
