"""mock-ib in a background thread: start once, reload, stop (the agent and the command share it)."""

from __future__ import annotations

import threading

from mokka.ib.fabric import Fabric
from mokka.ib.server import Server


class MockIb:
    def __init__(self, socket_path: str, fabric: Fabric, log, relay=None):
        self.server = Server(socket_path, fabric, log, relay=relay)
        self.relay = relay
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self, timeout: float = 10.0) -> "MockIb":
        def serve() -> None:
            try:
                self.server.serve()
            except BaseException as exc:      # noqa: BLE001 - reported through ready()/error
                self.error = exc
                self.server.ready.set()
                self.server.log.error("mock-ib stopped", error=f"{type(exc).__name__}: {exc}")

        self._thread = threading.Thread(target=serve, name="mock-ib", daemon=True)
        self._thread.start()
        self.server.ready.wait(timeout)
        if self.error is not None:
            raise self.error
        if self.relay is not None:
            try:
                self.relay.start(self.server)
            except BaseException:
                self.relay = self.server.relay = None
                self.stop(timeout)
                raise
        return self

    def reload(self, fabric: Fabric) -> None:
        self.server.reload(fabric)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        if self.relay is not None:
            self.relay.stop()
        self.server.stop()
        if self._thread is not None:
            self._thread.join(timeout)
