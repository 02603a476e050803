"""The synchronous client: the operations of _runs.py, _signals.py and _flows.py, run blocking."""

from __future__ import annotations

import grpc

from waymark import _follow, _forks, _runs, _signals, _tokens, _unary
from waymark._core import ClientCore
from waymark._flows import Flows
from waymark._mcp import McpServers
from waymark._schedules import Schedules
from waymark._shells import SyncShell, blocking, blocking_iter
from waymark.v1 import run_service_pb2_grpc, signal_service_pb2_grpc, worker_service_pb2_grpc

__all__ = ["Client", "Flows", "McpServers", "Schedules"]


class Client(ClientCore):
    """A blocking client for one Waymark server (or a load-balanced address of several).

    ``tls`` is ``False`` for plaintext HTTP/2 (``waymark dev``, in-cluster servers), ``True``
    for TLS with the system roots, or a :class:`grpc.ChannelCredentials` (such as
    :func:`waymark.tls_credentials` with a CA file and a client certificate); ``server_name`` is
    the name to verify the server's certificate against when it differs from the address's host.
    ``token`` is sent as
    ``authorization: Bearer <token>``. Arguments left unset come from the environment, as the
    CLI's and the other clients' do: ``WAYMARK_ADDRESS`` (else ``127.0.0.1:50051``),
    ``WAYMARK_TOKEN``, ``WAYMARK_NAMESPACE``, and for TLS ``WAYMARK_TLS=1``, ``WAYMARK_CA_FILE``,
    ``WAYMARK_CLIENT_CERT_FILE`` / ``WAYMARK_CLIENT_KEY_FILE`` and ``WAYMARK_SERVER_NAME`` (any of
    them turns TLS on unless ``tls=False``); an argument given in code wins. ``timeout`` (seconds) is the deadline of each attempt of a
    unary call that has no ``timeout=`` of its own; a method's ``timeout=`` bounds that call as a
    whole, retries included. ``retry`` paces the retries of unary calls (docs/clients.md),
    ``backoff`` the reconnects of event streams. ``connect_timeout`` makes the constructor wait
    for a connection and raise :class:`waymark.Unavailable` when none comes in that many
    seconds (default: connect on the first call). Use as a context manager, or call :meth:`close`.

    ``client.flows`` registers and reads declarative flows (:class:`Flows`), ``client.mcp`` MCP
    servers (:class:`McpServers`), ``client.schedules`` schedules (:class:`Schedules`). The generated stubs
    are ``client.runs``, ``client.signals``, ``client.workers`` (WorkerService, which
    :class:`waymark.Worker` serves tools through) and ``client.flows.stub``, for anything not
    wrapped here (they do not retry).
    """

    _channels = grpc
    _channel: grpc.Channel

    def _attach(self, connect_timeout: float | None) -> None:
        self._shell = SyncShell(self._metadata)
        self.runs = run_service_pb2_grpc.RunServiceStub(self._channel)
        self.signals = signal_service_pb2_grpc.SignalServiceStub(self._channel)
        self.workers = worker_service_pb2_grpc.WorkerServiceStub(self._channel)
        self.flows = Flows(self)
        self.mcp = McpServers(self)
        self.schedules = Schedules(self)
        if connect_timeout is not None:
            try:
                self.wait_ready(connect_timeout)
            except BaseException:
                self._channel.close()
                raise

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    wait_ready = blocking(_unary.wait_ready)

    # Runs
    start_run = blocking(_runs.start_run)
    get_run = blocking(_runs.get_run)
    list_runs = blocking_iter(_runs.list_runs)
    purge_runs = blocking(_runs.purge_runs)
    journal = blocking_iter(_runs.journal)
    events = blocking_iter(_follow.events)
    result = blocking(_runs.result)
    resume = blocking(_runs.resume)
    preview_resume = blocking(_runs.preview_resume)
    cancel = blocking(_runs.cancel)
    list_workflows = blocking(_runs.list_workflows)
    provenance = blocking(_runs.provenance)
    tokens = blocking_iter(_tokens.tokens)

    # Forks and comparing runs (docs/forks.md)
    fork = blocking(_forks.fork)
    preview_fork = blocking(_forks.preview_fork)
    compare_runs = blocking(_forks.compare_runs)

    # Signals and approvals
    send_signal = blocking(_signals.send_signal)
    list_approvals = blocking_iter(_signals.list_approvals)
    get_approval = blocking(_signals.get_approval)
    approve = blocking(_signals.approve)
    deny = blocking(_signals.deny)
