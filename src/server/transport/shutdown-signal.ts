import { Code, ConnectError, createContextKey, type HandlerContext } from '@connectrpc/connect';
import { ErrorInfoSchema } from '../../gen/google/rpc/error_details_pb.js';

/**
 * Long-lived streams (StreamRunEvents following a run, Health/Watch, reflection) never end on their
 * own, so a draining server would otherwise wait out its whole grace period for them. The server
 * aborts this signal when it starts draining; stream handlers watch it through `streamSignal()` and
 * end with UNAVAILABLE at once, so clients reconnect to another replica and resume from their
 * cursor. Unary handlers ignore it and finish normally within the grace period.
 *
 * The default (no server, e.g. `createRouterTransport` in tests) is a signal that never aborts.
 */
export const shutdownSignalKey = createContextKey<AbortSignal>(new AbortController().signal, {
  description: 'waymark server draining',
});

/** The reason streams end with when the server drains: clients treat UNAVAILABLE as "retry elsewhere". */
export function serverShutdownError(): ConnectError {
  return new ConnectError('the server is shutting down; reconnect, another replica will serve the call', Code.Unavailable, undefined, [
    { desc: ErrorInfoSchema, value: { reason: 'SHUTTING_DOWN', domain: 'waymark' } },
  ]);
}

/**
 * Aborts when the call ends (client cancel, deadline), the server starts draining, or at
 * `deadline` (a stream token's expiry) with its reason. Its reason is always something
 * `ConnectError.from` turns into the right status for the client.
 *
 * Not `AbortSignal.any`: on Node 20 every signal it makes stays in its sources' set of dependants
 * (a WeakRef each, never pruned), so the server-wide draining signal grew by one entry per stream
 * for the server's whole life. Here the draining signal holds a listener only while the call is
 * open: it is removed when the call's signal aborts (Connect aborts it however the call ends) or
 * when this signal aborts.
 */
export function streamSignal(ctx: HandlerContext, deadline?: { at: Date; reason: () => unknown }): AbortSignal {
  const call = ctx.signal;
  const draining = ctx.values.get(shutdownSignalKey);
  const controller = new AbortController();
  if (call.aborted) controller.abort(call.reason);
  else if (draining.aborted) controller.abort(draining.reason);
  else if (deadline && deadline.at.getTime() <= Date.now()) controller.abort(deadline.reason());
  if (controller.signal.aborted) return controller.signal;
  // A stream token's expiry (docs/security.md "Stream tokens"): at most an hour away, so one timer; unref'd, and cleared with the hooks.
  const timer = deadline ? setTimeout(() => {
    unhook();
    controller.abort(deadline.reason());
  }, Math.min(deadline.at.getTime() - Date.now(), 2_147_483_647)) : undefined;
  timer?.unref();
  const onCall = (): void => {
    unhook();
    controller.abort(call.reason);
  };
  const onDraining = (): void => {
    unhook();
    controller.abort(draining.reason);
  };
  const unhook = (): void => {
    clearTimeout(timer);
    call.removeEventListener('abort', onCall);
    draining.removeEventListener('abort', onDraining);
  };
  call.addEventListener('abort', onCall, { once: true });
  draining.addEventListener('abort', onDraining, { once: true });
  return controller.signal;
}

/**
 * Settles like `promise`, or rejects with the signal's reason as a ConnectError once it aborts.
 * A stream handler that merely returned on abort would end its stream with OK, and clients would
 * take that as "the run has no more events"; rethrowing gives them UNAVAILABLE instead.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(ConnectError.from(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(ConnectError.from(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
