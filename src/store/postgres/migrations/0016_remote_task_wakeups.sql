-- 0016_remote_task_wakeups: a wake-up when a remote task becomes claimable (docs/workers.md
-- "Idle polls"). Forward-only.

-- 'waymark_task' (payload: namespace): a task was created, or retried (pending again). Long polls
-- wait on it instead of looking at the store on a timer; a task that becomes claimable by time
-- alone (a retry's backoff, a lapsed claim) is found by remoteTaskNextAt, not by a notification.
CREATE FUNCTION waymark_notify_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('waymark_task', NEW.namespace);
  RETURN NULL;
END $$;
CREATE TRIGGER remote_tasks_notify_created AFTER INSERT ON remote_tasks
  FOR EACH ROW WHEN (NEW.state = 'pending') EXECUTE FUNCTION waymark_notify_task();
CREATE TRIGGER remote_tasks_notify_pending AFTER UPDATE OF state ON remote_tasks
  FOR EACH ROW WHEN (NEW.state = 'pending' AND OLD.state <> 'pending') EXECUTE FUNCTION waymark_notify_task();
