"""CRI over containerd's unix socket: CRI's api.proto compiled once per process,
and a small client over the generated stubs."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from tests.integration.runtime import HarnessError, fetched

@dataclasses.dataclass
class CriApi:
    pb2: Any
    grpc: Any  # the *_pb2_grpc module
    directory: str


_CRI_API_CACHE: dict[str, CriApi] = {}
_CRI_API_LOCK = threading.Lock()
_CRI_MODULE = "mokka_cri_api"  # unique file/module name: no clash with other api.proto


def strip_gogo(text: str) -> str:
    """The three substitutions (as sed expressions) that make CRI's api.proto standalone."""
    text = re.sub(r'(?m)^import\s+"github\.com/gogo/protobuf/gogoproto/gogo\.proto";\s*$\n?', "", text)
    text = re.sub(r"(?m)^option\s+\(gogoproto\.[^)]*\)\s*=\s*[^;]*;\s*$\n?", "", text)
    text = re.sub(r"\s*\[\(gogoproto\.[^\]]*\]", "", text)
    return text


def load_cri_api(workdir: str | os.PathLike | None = None, proto: str | None = None) -> CriApi:
    """Compile CRI's api.proto with grpc_tools.protoc and import the modules.

    Cached per process (i.e. per pytest session), keyed by the proto path."""
    if proto is None:
        proto = fetched("runtime").cri_api_proto
    proto = os.path.abspath(proto)
    with _CRI_API_LOCK:
        if proto in _CRI_API_CACHE:
            return _CRI_API_CACHE[proto]
        if _CRI_MODULE + "_pb2" in sys.modules:
            # Compiled from another proto path earlier in this process: the descriptor
            # pool already holds the file; reuse those modules.
            api = CriApi(sys.modules[_CRI_MODULE + "_pb2"], sys.modules[_CRI_MODULE + "_pb2_grpc"], "")
            _CRI_API_CACHE[proto] = api
            return api
        from grpc_tools import protoc  # imported lazily: only the runtime tests need it
        import grpc_tools

        base = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="mokka-cri-"))
        out = base / "cri-proto"
        out.mkdir(parents=True, exist_ok=True)
        src = out / f"{_CRI_MODULE}.proto"
        src.write_text(strip_gogo(Path(proto).read_text()))
        include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
        rc = protoc.main([
            "grpc_tools.protoc",
            f"-I{out}",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            str(src),
        ])
        if rc != 0:
            raise HarnessError(f"protoc failed ({rc}) on {src} (from {proto})")
        modules = []
        for name in (_CRI_MODULE + "_pb2", _CRI_MODULE + "_pb2_grpc"):
            spec = importlib.util.spec_from_file_location(name, out / f"{name}.py")
            assert spec and spec.loader
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # the _grpc module imports the _pb2 one by name
            spec.loader.exec_module(module)
            modules.append(module)
        api = CriApi(modules[0], modules[1], str(out))
        _CRI_API_CACHE[proto] = api
        return api


DEFAULT_CGROUP_PARENT = "/mokka-integration"


class CRIClient:
    """A small CRI client over a unix socket.

    ``.pb`` is the generated message module (runtime.v1), ``.runtime`` and ``.image``
    the RuntimeServiceStub and ImageServiceStub. ``call``/``image_call`` build the
    request from keyword fields: ``client.call("ListContainers")``."""

    def __init__(self, api: CriApi, socket_path: str, workdir: str | os.PathLike,
                 cgroup_parent: str = DEFAULT_CGROUP_PARENT, timeout: float = 30.0):
        import grpc

        self.api = api
        self.pb = api.pb2
        self.socket_path = str(socket_path)
        self.workdir = Path(workdir)
        self.cgroup_parent = cgroup_parent
        self.timeout = timeout
        self.channel = grpc.insecure_channel(
            "unix:" + self.socket_path,
            options=[
                ("grpc.initial_reconnect_backoff_ms", 50),
                ("grpc.min_reconnect_backoff_ms", 50),
                ("grpc.max_reconnect_backoff_ms", 250),
                ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ],
        )
        self.runtime = api.grpc.RuntimeServiceStub(self.channel)
        self.image = api.grpc.ImageServiceStub(self.channel)

    # generic calls -------------------------------------------------------------------
    def _call(self, stub, method: str, request=None, timeout: float | None = None, **fields):
        if request is None:
            request = getattr(self.pb, method + "Request")(**fields)
        return getattr(stub, method)(request, timeout=timeout or self.timeout)

    def call(self, method: str, request=None, timeout: float | None = None, **fields):
        """Call a RuntimeService method: ``call("ContainerStatus", container_id=cid)``."""
        return self._call(self.runtime, method, request, timeout, **fields)

    def image_call(self, method: str, request=None, timeout: float | None = None, **fields):
        """Call an ImageService method: ``image_call("ListImages")``."""
        return self._call(self.image, method, request, timeout, **fields)

    # conveniences ----------------------------------------------------------------------
    def version(self, timeout: float = 5.0):
        return self.call("Version", timeout=timeout, version="v1")

    def list_pods(self) -> list:
        return list(self.call("ListPodSandbox").items)

    def list_containers(self, pod_id: str | None = None) -> list:
        if pod_id is None:
            return list(self.call("ListContainers").containers)
        flt = self.pb.ContainerFilter(pod_sandbox_id=pod_id)
        return list(self.call("ListContainers", filter=flt).containers)

    def list_images(self) -> list:
        return list(self.image_call("ListImages").images)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def cri_client(tmpdir: str | os.PathLike, socket_path: str, *,
               cgroup_parent: str = DEFAULT_CGROUP_PARENT, proto: str | None = None) -> CRIClient:
    """Compile (once per session) the CRI protos into ``tmpdir`` and connect to the
    containerd CRI socket ``socket_path``. Pod log folders also go under ``tmpdir``."""
    api = load_cri_api(tmpdir, proto)
    return CRIClient(api, socket_path, tmpdir, cgroup_parent=cgroup_parent)
