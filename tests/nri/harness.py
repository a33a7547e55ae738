"""The driver (mokka.nri.plugin) in a thread against a FakeRuntime, with its
probes served: what the driver tests build on."""

from __future__ import annotations

import http.client
import threading

from mokka.nri.health import Health, ProbeServer
from mokka.nri.plugin import Plugin, PluginConfig
from mokka.nri.proto import nri_pb2
from tests.nri.fakeruntime import FakeRuntime, PluginLink, remove_socket_dir, short_socket_path

NAME, INDEX = "mokka-test", "42"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Harness:
    def __init__(self, handler=None, clock=None, **runtime_kwargs) -> None:
        self.path = short_socket_path()
        self.runtime = FakeRuntime(self.path, **runtime_kwargs)
        self.calls: list[tuple] = []
        self.handler = handler or self.record
        self.health = Health(now=clock) if clock else Health()
        self.plugin = Plugin(PluginConfig(socket_path=self.path, name=NAME, index=INDEX,
                                          backoff_initial_s=0.01, backoff_max_s=0.05),
                             lambda *a: self.handler(*a), health=self.health)
        self.thread = threading.Thread(target=self.plugin.run, daemon=True)
        self.thread.start()
        self.probes = ProbeServer("127.0.0.1", 0, self.health).start()

    def record(self, pod, container, runtime):
        self.calls.append((pod, container, runtime))
        return nri_pb2.CreateContainerResponse(adjust=nri_pb2.ContainerAdjustment(
            env=[nri_pb2.KeyValue(key="SEEN", value=container.name)])).SerializeToString()

    def get(self, path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.probes.port, timeout=5)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def link(self, count: int = 1) -> PluginLink:
        return self.runtime.wait_link(count)

    def close(self) -> None:
        self.plugin.stop()
        self.thread.join(5)
        assert not self.thread.is_alive()
        self.probes.stop()
        self.runtime.close()
        remove_socket_dir(self.path)


def pod_and_container(i: int = 0):
    pod = nri_pb2.PodSandbox(id=f"pod{i}", name=f"web-{i}", namespace="default", uid="u",
                             annotations={"a": "b"})
    ctr = nri_pb2.Container(id=f"c{i}", name=f"app-{i}", env=["PATH=/bin"])
    return pod, ctr
