-- 0013_remote_tasks: remote tools (tools served by workers over WorkerService, docs/workers.md).
-- Forward-only.

-- The latest declaration of each remote tool, per namespace. Kept after its workers leave, so a
-- run can call a tool while no worker is connected (the call waits for one, up to its timeout).
CREATE TABLE remote_tools (
  namespace   text NOT NULL,
  name        text NOT NULL,
  declaration jsonb NOT NULL,
  declared_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (namespace, name)
);

-- One row per worker; live while expires_at is in the future (database clock). `tools` is the
-- JSON array of the tool names it serves.
CREATE TABLE remote_workers (
  namespace    text NOT NULL,
  id           text NOT NULL,
  tools        jsonb NOT NULL,
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (namespace, id)
);

-- One task per remote tool call: the call's `suspended` journal entry (run_id, seq). `attempt`
-- is the fencing token: every claim bumps it, and a heartbeat or result must carry the current
-- one. A claim lapses at claim_expires_at; the task is then claimable again (a redispatch with the
-- same idempotency key). `state` done: a result or the final failure was journaled. A task whose
-- suspension was closed otherwise (its deadline, the run cancelled or ended) is not claimable:
-- the claim statement checks the journal, so nothing has to close the task itself. No foreign key
-- to runs, as the outbox has none: tables that are truncated together in tests stay independent.
CREATE TABLE remote_tasks (
  run_id               uuid NOT NULL,
  seq                  integer NOT NULL,
  namespace            text NOT NULL,
  tool                 text NOT NULL,
  queue                text NOT NULL,
  input                jsonb,
  idempotency_key      text NOT NULL,
  attempt              integer NOT NULL DEFAULT 0,
  max_attempts         integer NOT NULL,
  heartbeat_timeout_ms integer NOT NULL,
  state                text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'claimed', 'done')),
  holder               text,
  claim_expires_at     timestamptz,
  available_at         timestamptz NOT NULL DEFAULT now(),
  deadline_at          timestamptz NOT NULL,
  last_error           jsonb,
  created_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, seq)
);

-- remoteTaskClaim: the unfinished tasks of a tool and queue, oldest first.
CREATE INDEX remote_tasks_open ON remote_tasks (namespace, tool, queue, created_at) WHERE state <> 'done';
