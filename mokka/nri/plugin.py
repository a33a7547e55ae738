"""The NRI driver: owns the socket, registers, serves the runtime's calls.

One session per connection: send RegisterPlugin on the runtime connection,
serve the plugin connection meanwhile (Configure may arrive before that reply),
run CreateContainer handlers on worker threads so the reader never blocks on a
handler, and write every message whole under one lock. Whatever goes wrong, the
container is answered OK, unadjusted (fail open), and the plugin keeps going:
on EOF or a corrupt stream it is marked unregistered at once and reconnects.

Fail open by construction: a request the codec refuses on the plugin
connection (over 4 MiB, a bad stream id, an undecodable envelope) is answered
OK with no adjustment, never with ttrpc's error status; only a stream that
cannot be resynchronised (a header claiming over 16 MiB) closes the socket.

Leader/followers: ``workers`` threads per connection take turns reading; the
one that reads a CreateContainer hands reading to the next and decides it
itself, so no request waits for a thread switch on its way to the decision.

Bounded memory by backpressure: at most ``workers`` CreateContainers (and
``max_in_flight_bytes`` of their requests) are received and not yet answered.
At the bound nobody reads, so a runtime that pipelines faster than we answer,
or stops reading replies, fills its own socket buffer instead of our memory;
the pause is logged once per episode and counted in /metrics.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import dataclasses
from dataclasses import dataclass
from typing import Callable, Mapping

from google.protobuf.message import DecodeError

from mokka.core import log as logmod
from mokka.core import names
from mokka.nri import runtime_info
from mokka.nri.codec import ttrpc
from mokka.nri.codec.conn import Connection
from mokka.nri.codec.mux import NEED_DATA, PLUGIN_CONN, RUNTIME_CONN, ProtocolError
from mokka.nri.health import Health
from mokka.nri.session import Session
from mokka.nri.proto import nri_pb2
from mokka.nri.runtime_info import RuntimeInfo

PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin"
RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime"
REGISTER_STREAM = 1          # our first (and only) call on the runtime connection
#: An overload episode is logged at most this often; every one is counted.
OVERLOAD_LOG_INTERVAL_S = 10.0

#: The CreateContainer handler: the serialized CreateContainerResponse
#: (b"" for no adjustment). It gets the request as CreateContainerRequestRead
#: decodes it (what the decision reads; the environment as bytes).
Handler = Callable[[nri_pb2.PodSandboxRead, nri_pb2.ContainerRead, RuntimeInfo], bytes]


@dataclass(frozen=True)
class PluginConfig:
    socket_path: str = names.NRI_SOCKET_PATH
    name: str = names.NRI_PLUGIN_NAME
    index: str = names.NRI_PLUGIN_INDEX
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 2.0
    workers: int = 4
    prelaunched_fd: int | None = None     # set: use this fd once, never reconnect
    #: Request bytes of the CreateContainers received and not yet answered, at
    #: most (one request is always admitted). Their number is at most ``workers``.
    max_in_flight_bytes: int = 4 << 20


def from_environment(config: PluginConfig,
                     environ: Mapping[str, str] = os.environ) -> PluginConfig:
    """Pre-launched by the runtime: its fd, name and index replace the flags."""
    launched = runtime_info.prelaunch(environ)
    if launched is None:
        return config
    fd, name, index = launched
    return dataclasses.replace(config, name=name, index=index, prelaunched_fd=fd)


class Plugin:
    def __init__(self, config: PluginConfig, handler: Handler, *, health: Health | None = None,
                 connect: Callable[[], socket.socket] | None = None,
                 logger: logmod.Logger | None = None) -> None:
        self.config = config
        self.health = health or Health()
        self._handler = handler
        self._connect = connect or self._default_connect
        self._log = logger or logmod.get("mokka.nri.plugin")
        self._stop = threading.Event()
        self._overload_logged_at = -OVERLOAD_LOG_INTERVAL_S
        self._session: Session | None = None
        self._runtime: RuntimeInfo | None = None
        # Method -> synchronous handler; the event mask follows from this table
        # (as containerd's stub derives it), so a method is never subscribed
        # without a handler.
        self._sync = {"Configure": self._configure, "Synchronize": self._synchronize,
                      "Shutdown": self._shutdown}
        self._events = runtime_info.event_mask(["CreateContainer", *self._sync])

    # --- Public surface ----------------------------------------------------------

    @property
    def failed_open_total(self) -> int:
        return self.health.counter("failed_open_total")

    @property
    def runtime(self) -> RuntimeInfo | None:
        return self._runtime

    def run(self) -> None:
        """Connect, serve, reconnect; returns after ``stop`` (or pre-launched EOF)."""
        delay = self.config.backoff_initial_s
        failures = 0
        connected_before = False
        while not self._stop.is_set():
            try:
                sock = self._connect()
            except OSError as exc:
                if self.config.prelaunched_fd is not None:
                    self._log.error("pre-launched, but the inherited socket is unusable",
                                    fd=self.config.prelaunched_fd, reason=str(exc))
                    break
                failures += 1
                level = self._log.warning if failures == 1 else self._log.debug
                level("cannot reach the NRI socket; retrying", socket=self.config.socket_path,
                      reason=str(exc), retry_in_s=delay)
            else:
                failures = 0
                if connected_before:
                    self.health.count("reconnects_total")
                connected_before = True
                configured, reason = self._serve(Session(
                    sock, max(1, self.config.workers), self.config.max_in_flight_bytes))
                _return_freed_memory()
                if configured:
                    delay = self.config.backoff_initial_s   # it registered: start over fast
                if self.config.prelaunched_fd is not None:
                    # The runtime cannot reconnect us and we cannot reconnect it:
                    # exit, so it is visible, and containerd relaunches the plugin
                    # when it restarts. See the README ("pre-launched").
                    self._log.error("the pre-launched plugin's connection ended; exiting "
                                    "(containers are not injected until the runtime "
                                    "restarts and launches the plugin again)", reason=reason)
                    break
            if self._stop.wait(delay):
                break
            delay = min(delay * 2, self.config.backoff_max_s)

    def stop(self) -> None:
        """Safe from a signal handler: takes no lock the interrupted thread may hold."""
        self._stop.set()
        session = self._session
        if session is not None:
            session.close()

    # --- Session -----------------------------------------------------------------

    def _default_connect(self) -> socket.socket:
        if self.config.prelaunched_fd is not None:
            return socket.socket(fileno=self.config.prelaunched_fd)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.config.socket_path)
        except OSError:
            sock.close()
            raise
        return sock

    def _serve(self, session: Session) -> tuple[bool, str]:
        """Serve one connection until it ends: (configured by the runtime, why it ended)."""
        self._session = session
        self.health.in_flight_count = lambda: session.admission.count
        if self._stop.is_set():        # stop() raced the connect
            session.close()
        session.send(Connection.request_bytes(
            RUNTIME_CONN, REGISTER_STREAM, RUNTIME_SERVICE, "RegisterPlugin",
            nri_pb2.RegisterPluginRequest(plugin_name=self.config.name,
                                          plugin_idx=self.config.index).SerializeToString()))
        for i in range(max(1, self.config.workers)):
            threading.Thread(target=self._lead, args=(session,), daemon=True,
                             name=f"nri-session-{i}").start()
        # This thread only waits, so a wedged handler can never keep it from
        # reporting the loss and reconnecting; the session's threads are
        # daemons and end with it (a wedged one ends with the process).
        session.closed.wait()
        configured, reason = session.configured, session.end_reason
        self.health.clear_registered()        # first: /readyz must fail at once
        session.close()
        self._session = None
        if not self._stop.is_set():
            self._log.warning("NRI connection lost; containers are not injected until it is back",
                              reason=reason)
        return configured, reason

    def _lead(self, session: Session) -> None:
        """Leader/followers: the thread whose turn it is reads (holding
        ``read_lock``) and serves the quick calls; with a CreateContainer in
        hand it passes the turn on (the next bytes wake a follower) and
        handles that request itself. No handoff to another thread on the way
        from socket to decision, and none at all while nothing more arrives."""
        while session.wait_turn():
            with session.read_lock:
                event = self._next_create_container(session)
                received = time.perf_counter()
                session.pass_turn()
            if event is None:
                return
            self._create_container(session, event, received)

    def _next_create_container(self, session: Session) -> ttrpc.RequestReceived | None:
        """Read and dispatch until a CreateContainer is admitted; None once the session ends."""
        codec = session.codec
        try:
            while not session.closed.is_set():
                event = codec.next_event()
                if event is NEED_DATA:
                    data = session.sock.recv(65536)
                    if not data:
                        session.end("connection closed by the runtime")
                        return None
                    codec.receive_data(data)
                elif isinstance(event, ttrpc.RequestReceived) and event.conn_id == PLUGIN_CONN \
                        and event.method == "CreateContainer" and event.service == PLUGIN_SERVICE:
                    size = len(event.payload)
                    if not session.admission.try_acquire(size):
                        self._overloaded(session)
                        if not session.admission.acquire(size, session.closed):  # reading stops
                            return None
                    elif session.admission.count >= self.config.workers:
                        self._overloaded(session)      # every thread busy: nobody reads now
                    return event
                elif self._dispatch(session, event):
                    session.configured = True
        except ProtocolError as exc:
            self.health.count("protocol_errors_total")
            session.end(f"protocol error: {exc}")
        except OSError as exc:
            session.end(f"connection error: {exc}")
        except Exception as exc:               # a bug here must cost a reconnect, not the plugin
            self._log.exception("NRI session failed", reason=str(exc))
            session.end(f"internal error: {exc}")
        return None

    def _dispatch(self, session: Session, event: ttrpc.Event) -> bool:
        if isinstance(event, ttrpc.Rejected):
            if event.conn_id == PLUGIN_CONN:
                # Whatever it was (most likely a CreateContainer), fail open: no
                # adjustment, never ttrpc's error status: a container is never failed.
                total = self.health.count("rejected_requests_total")
                self._log.warning("refused request answered with no adjustment (failed open)",
                                  stream=event.stream_id, code=event.code, reason=event.message,
                                  rejected_total=total)
                session.send(Connection.response_bytes(PLUGIN_CONN, event.stream_id))
            else:
                session.send(Connection.response_bytes(event.conn_id, event.stream_id,
                                                       code=event.code, message=event.message))
        elif isinstance(event, ttrpc.ResponseReceived):
            if event.conn_id == RUNTIME_CONN and event.stream_id == REGISTER_STREAM \
                    and event.code != ttrpc.OK:
                self._log.error("the runtime refused the registration", plugin=self.config.name,
                                index=self.config.index, code=event.code, reason=event.message)
                session.end(f"registration refused: {event.message}")
        elif event.conn_id != PLUGIN_CONN:
            session.send(Connection.response_bytes(
                event.conn_id, event.stream_id, code=ttrpc.UNIMPLEMENTED,
                message=f"service {event.service}"))
        else:
            payload, code, message = self._call_sync(event)
            session.send(Connection.response_bytes(PLUGIN_CONN, event.stream_id,
                                                   payload, code, message))
            return event.method == "Configure" and code == ttrpc.OK
        return False

    def _call_sync(self, event: ttrpc.RequestReceived) -> tuple[bytes, int, str]:
        if event.service != PLUGIN_SERVICE:
            return b"", ttrpc.UNIMPLEMENTED, f"service {event.service}"
        method = self._sync.get(event.method)
        if method is None:
            return b"", ttrpc.UNIMPLEMENTED, f"method {event.method}"
        try:
            return method(event), ttrpc.OK, ""
        except DecodeError as exc:
            self._log.warning("undecodable NRI request", method=event.method, reason=str(exc))
            return b"", ttrpc.INVALID_ARGUMENT, f"{event.method}: cannot decode request: {exc}"
        except Exception as exc:               # as a Go handler's error: status, not a crash
            self._log.exception("NRI call failed", method=event.method)
            return b"", ttrpc.UNKNOWN, str(exc)

    # --- Methods -------------------------------------------------------------------

    def _configure(self, event: ttrpc.RequestReceived) -> bytes:
        req = nri_pb2.ConfigureRequest.FromString(event.payload)
        info = runtime_info.from_configure(req.runtime_name, req.runtime_version,
                                           req.registration_timeout, req.request_timeout,
                                           event.timeout_nano)
        self._runtime = info
        self.health.set_registered(info)
        self._log.info("registered with the container runtime", plugin=self.config.name,
                       index=self.config.index, runtime=info.name, version=info.version,
                       request_timeout_s=info.request_timeout_s, timeout_from=info.timeout_source,
                       cdi_adjustments=info.accepts_cdi, cdi_reason=info.cdi_reason)
        return nri_pb2.ConfigureResponse(events=self._events).SerializeToString()

    def _synchronize(self, event: ttrpc.RequestReceived) -> bytes:
        # Nothing to update in existing containers. A newer runtime sending the
        # state in chunks (more=true) waits for more=true back before the rest.
        try:
            more = nri_pb2.SynchronizeRequest.FromString(event.payload).more
        except DecodeError:
            more = False
        return nri_pb2.SynchronizeResponse(more=more).SerializeToString()

    def _shutdown(self, event: ttrpc.RequestReceived) -> bytes:
        self._log.info("the runtime is shutting down")
        return b""

    def _overloaded(self, session: Session) -> None:
        """Reading paused: count it; log the episode (at most every OVERLOAD_LOG_INTERVAL_S)."""
        total = self.health.count("backpressure_pauses_total")
        now = time.monotonic()
        with session.overload_lock:
            if session.overloaded_since is not None:
                return                                  # same episode
            session.overloaded_since = now
            log_it = now - self._overload_logged_at >= OVERLOAD_LOG_INTERVAL_S
            if log_it:
                self._overload_logged_at = now
            session.overload_logged = log_it
        self.health.gauge("overloaded", 1)
        if log_it:
            self._log.warning("overloaded: not reading from the runtime until replies drain",
                              in_flight=session.admission.count,
                              in_flight_bytes=session.admission.bytes,
                              workers=self.config.workers,
                              backpressure_pauses_total=total,
                              note=f"episodes within {OVERLOAD_LOG_INTERVAL_S:.0f}s of this "
                                   "one are only counted (/metrics)")

    def _overload_over(self, session: Session) -> None:
        with session.overload_lock:
            since, logged = session.overloaded_since, session.overload_logged
            session.overloaded_since = None
        if since is None:
            return
        self.health.gauge("overloaded", 0)
        if logged:
            self._log.info("overload over: every request answered",
                           overloaded_s=round(time.monotonic() - since, 3),
                           backpressure_pauses_total=self.health.counter(
                               "backpressure_pauses_total"))

    def _create_container(self, session: Session, event: ttrpc.RequestReceived,
                          received: float) -> None:
        # The reply goes out as soon as it is decided: what only reports on
        # it (the counts, the latency histograms, the in-flight bound) follows.
        token = self.health.begin()             # a running handler ages towards /healthz
        decided = None
        try:
            payload, decided = self._adjust(event)
            reply = Connection.response_bytes(PLUGIN_CONN, event.stream_id, payload)
        except ProtocolError as exc:           # over the 4 MiB message limit
            self._fail_open("adjustment too large to send", str(exc))
            reply = Connection.response_bytes(PLUGIN_CONN, event.stream_id)
        except Exception as exc:               # a bug here: still answer, unadjusted
            self._log.exception("CreateContainer failed", stream=event.stream_id)
            self._fail_open(str(exc) or type(exc).__name__, type(exc).__name__)
            reply = Connection.response_bytes(PLUGIN_CONN, event.stream_id)
        finally:
            self.health.end(token)
        sent = session.send(reply)
        done = time.perf_counter()
        self.health.count("create_container_total")
        if decided is not None:
            self.health.decision_seconds.observe(decided)
        self.health.request_seconds.observe(done - received)
        left = session.admission.release(len(event.payload))
        if left == 0 and session.overloaded_since is not None:
            self._overload_over(session)
        if not sent:
            self._log.debug("dropped a CreateContainer reply: connection closed",
                            stream=event.stream_id)

    def _adjust(self, event: ttrpc.RequestReceived) -> tuple[bytes, float | None]:
        """The reply payload, and how long the handler took to decide (None:
        it did not run). On any failure an empty adjustment (fail open)."""
        try:
            req = nri_pb2.CreateContainerRequestRead.FromString(event.payload)
        except DecodeError as exc:
            self._fail_open("cannot decode CreateContainer request", str(exc))
            return b"", None
        runtime = self._runtime or RuntimeInfo()
        started = time.perf_counter()
        try:
            payload = self._handler(req.pod, req.container, runtime)
            return payload, time.perf_counter() - started
        except Exception as exc:      # fail open at the driver edge, never crash
            self._fail_open(str(exc) or type(exc).__name__, type(exc).__name__,
                            namespace=req.pod.namespace, pod=req.pod.name,
                            container=req.container.name)
            return b"", None

    def _fail_open(self, reason: str, error: str, **fields) -> None:
        total = self.health.count("failed_open_total")
        self._log.warning("container left unmodified (failed open)", reason=reason,
                          error=error, failed_open_total=total, **fields)


#: glibc mallopt parameters (malloc.h).
_M_MMAP_THRESHOLD = -3
#: Requests and replies above this get their own mapping, unmapped when freed.
MMAP_THRESHOLD = 128 << 10


def keep_large_buffers_out_of_the_heap() -> None:
    """Pin glibc's mmap threshold (process-wide; call once at start-up).

    By default glibc raises the threshold to the size of the largest block
    freed so far (up to 32 MiB), so after a few 1 MiB requests every later one
    is carved from the worker threads' heaps, which keep what they free: RSS
    then grows with the number of large requests served, not with how many
    are in flight. Pinned, a large buffer is mapped and unmapped with its
    request, and the in-flight bound is the memory bound.
    """
    try:
        import ctypes
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    except (OSError, AttributeError):      # not glibc: nothing to do
        pass


def _return_freed_memory() -> None:
    """Hand the heap a closed connection freed back to the system.

    glibc keeps freed chunks in its arenas (one per worker thread), so
    without this RSS stays near its peak after a burst of large requests.
    """
    try:
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):      # not glibc: nothing to do
        pass
