"""A fake container runtime speaking the real NRI wire format, for tests.

It listens on a real Unix socket, accepts the plugin, answers RegisterPlugin
on the runtime connection (2) and calls the plugin on the plugin connection
(1) with stream ids 1, 3, 5, ... - the runtime side of the protocol, built on
the same sans-I/O codec as the plugin (``mokka.nri.codec``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import tempfile
import threading
import time

from mokka.nri.codec import ttrpc
from mokka.nri.codec.conn import Connection
from mokka.nri.codec.mux import PLUGIN_CONN, RUNTIME_CONN, ProtocolError
from mokka.nri.plugin import PLUGIN_SERVICE
from mokka.nri.proto import nri_pb2

WAIT_S = 5.0


def short_socket_path(name: str = "nri.sock") -> str:
    """A socket path well under the 108-byte sun_path limit."""
    return os.path.join(tempfile.mkdtemp(prefix="nri-", dir="/tmp"), name)


def remove_socket_dir(path: str) -> None:
    """Undo ``short_socket_path`` once nothing will listen there again."""
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


class PluginLink:
    """One accepted plugin connection, seen from the runtime."""

    def __init__(self, sock: socket.socket, runtime: "FakeRuntime") -> None:
        self.sock = sock
        self.runtime = runtime
        self.codec = Connection()
        self._write_lock = threading.Lock()
        self._cond = threading.Condition()
        self._stream_ids = itertools.count(1, 2)
        self.responses: dict[int, ttrpc.ResponseReceived] = {}
        self.registrations: list[nri_pb2.RegisterPluginRequest] = []
        self.closed = False
        self._held: list[int] = []
        # A runtime that stops reading (pause) or reads slowly (read_delay_s
        # between reads of recv_size bytes), as a wedged or loaded one would.
        self.reading = threading.Event()
        self.reading.set()
        self.recv_size = 65536
        self.read_delay_s = 0.0
        self._reader = threading.Thread(target=self._read, daemon=True, name="fake-runtime")
        self._reader.start()

    def send(self, data: bytes) -> None:
        with self._write_lock:
            self.sock.sendall(data)

    def _read(self) -> None:
        try:
            while True:
                self.reading.wait()
                if self.read_delay_s:
                    time.sleep(self.read_delay_s)
                data = self.sock.recv(self.recv_size)
                if not data:
                    break
                self.codec.receive_data(data)
                for event in self.codec.events():
                    self._on_event(event)
        except (OSError, ProtocolError):
            pass
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def _on_event(self, event) -> None:
        if isinstance(event, ttrpc.RequestReceived) and event.conn_id == RUNTIME_CONN \
                and event.method == "RegisterPlugin":
            with self._cond:
                self.registrations.append(nri_pb2.RegisterPluginRequest.FromString(event.payload))
                self._cond.notify_all()
                if self.runtime.hold_register_reply:
                    self._held.append(event.stream_id)
                    return
            self.send(Connection.response_bytes(RUNTIME_CONN, event.stream_id))
        elif isinstance(event, ttrpc.ResponseReceived):
            with self._cond:
                self.responses[event.stream_id] = event
                self._cond.notify_all()

    def pause(self) -> None:
        """Stop reading: the plugin's replies back up in the socket."""
        self.reading.clear()

    def resume(self, read_delay_s: float = 0.0, recv_size: int = 65536) -> None:
        self.read_delay_s, self.recv_size = read_delay_s, recv_size
        self.reading.set()

    def release_register_reply(self, code: int = ttrpc.OK, message: str = "") -> None:
        for sid in self._held:
            self.send(Connection.response_bytes(RUNTIME_CONN, sid, code=code, message=message))
        self._held.clear()

    def wait_registered(self, timeout: float = WAIT_S) -> nri_pb2.RegisterPluginRequest:
        with self._cond:
            if not self._cond.wait_for(lambda: self.registrations or self.closed, timeout):
                raise TimeoutError("plugin did not call RegisterPlugin")
            if not self.registrations:
                raise ConnectionError("plugin closed the connection before registering")
            return self.registrations[-1]

    def wait_closed(self, timeout: float = WAIT_S) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.closed, timeout)

    # --- Calls on the plugin connection -------------------------------------------

    def skip_stream_id(self) -> int:
        """Take the next stream id for a request the test writes itself."""
        return next(self._stream_ids)

    def start_call(self, method: str, payload: bytes = b"", service: str = PLUGIN_SERVICE,
                   timeout_nano: int = 2_000_000_000) -> int:
        sid = next(self._stream_ids)
        self.send(Connection.request_bytes(PLUGIN_CONN, sid, service, method, payload,
                                           timeout_nano))
        return sid

    def wait_response(self, sid: int, timeout: float = WAIT_S) -> ttrpc.ResponseReceived:
        with self._cond:
            if not self._cond.wait_for(lambda: sid in self.responses or self.closed, timeout):
                raise TimeoutError(f"no response on stream {sid}")
            if sid not in self.responses:
                raise ConnectionError(f"connection closed before the response on stream {sid}")
            return self.responses.pop(sid)

    def call(self, method: str, payload: bytes = b"", **kwargs) -> ttrpc.ResponseReceived:
        return self.wait_response(self.start_call(method, payload, **kwargs))

    def configure(self) -> nri_pb2.ConfigureResponse:
        rt = self.runtime
        req = nri_pb2.ConfigureRequest(runtime_name=rt.name, runtime_version=rt.version,
                                       registration_timeout=rt.registration_timeout_ms,
                                       request_timeout=rt.request_timeout_ms)
        resp = self.call("Configure", req.SerializeToString())
        assert resp.code == ttrpc.OK, resp
        return nri_pb2.ConfigureResponse.FromString(resp.payload)

    def synchronize(self, **fields) -> ttrpc.ResponseReceived:
        return self.call("Synchronize", nri_pb2.SynchronizeRequest(**fields).SerializeToString())

    def handshake(self) -> nri_pb2.ConfigureResponse:
        self.wait_registered()
        out = self.configure()
        assert self.synchronize().code == ttrpc.OK
        return out

    def create_container(self, pod: nri_pb2.PodSandbox, container: nri_pb2.Container,
                         timeout: float = WAIT_S):
        """(ttrpc response, decoded CreateContainerResponse)."""
        req = nri_pb2.CreateContainerRequest(pod=pod, container=container)
        resp = self.wait_response(self.start_call("CreateContainer", req.SerializeToString()),
                                  timeout)
        return resp, nri_pb2.CreateContainerResponse.FromString(resp.payload)

    def close(self) -> None:
        self.reading.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self._reader.join(WAIT_S)


class FakeRuntime:
    """Listens at ``path``; each accepted plugin becomes a ``PluginLink``.

    Defaults describe containerd 1.7.24 (NRI v0.6.1: no timeouts in Configure).
    """

    def __init__(self, path: str, *, name: str = "containerd", version: str = "1.7.24",
                 registration_timeout_ms: int = 0, request_timeout_ms: int = 0,
                 hold_register_reply: bool = False) -> None:
        self.path = path
        self.name, self.version = name, version
        self.registration_timeout_ms = registration_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.hold_register_reply = hold_register_reply
        self.links: list[PluginLink] = []
        self._cond = threading.Condition()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(4)
        self._accepter = threading.Thread(target=self._accept, daemon=True, name="fake-accept")
        self._accepter.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            link = PluginLink(sock, self)
            with self._cond:
                self.links.append(link)
                self._cond.notify_all()

    def wait_link(self, count: int = 1, timeout: float = WAIT_S) -> PluginLink:
        """The ``count``-th accepted connection (1-based)."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.links) >= count, timeout):
                raise TimeoutError(f"plugin did not connect (connection #{count})")
            return self.links[count - 1]

    def close(self) -> None:
        """Stop listening, drop every plugin and remove the socket file."""
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for link in list(self.links):
            link.close()
        self._accepter.join(WAIT_S)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __enter__(self) -> "FakeRuntime":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
