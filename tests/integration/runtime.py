"""Harness for running a REAL containerd (1.7, NRI v0.6.1) in a scratch folder.

No test functions live here; tests/integration/conftest.py builds fixtures on top.

The binaries and protos come from ``.ci/fetch-runtime.sh`` (Debian packages unpacked
into $MOKKA_RUNTIME_DIR or $HOME/.cache/mokka-runtime), which writes ``paths.env``.

Main entry points (see each docstring):

    runtime_paths() -> RuntimePaths | None
    load_cri_api(workdir=None, proto=None) -> CriApi             (cached per process)
    cri_client(tmpdir, socket_path, *, cgroup_parent=..., proto=None) -> CRIClient
    build_busybox_image(path, busybox=None, ref=IMAGE_REF) -> path
    Containerd(paths, workdir, *, enable_cdi=False, cdi_spec_dirs=None, ...)
    run_pod(client, name, namespace="default", annotations=None, ...) -> (pod_id, pod_config)
    create_container(client, pod_id, pod_config, name, command, annotations=None,
                     devices=None, envs=None, privileged=False, ...) -> container_id
    start_container(client, container_id)
    exec_sync(client, container_id, cmd, timeout=10) -> ExecResult
    start_and_exec(client, container_id, cmd, timeout=10) -> ExecResult
    container_spec(client, container_id) -> dict (the stored OCI spec)
    remove_pod(client, pod_id)
    wait_until(predicate, timeout=10.0, interval=0.05, message=None)
    validate_cdi_spec(spec_dict, schema_dir=None)  (raises jsonschema.ValidationError)
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import importlib.util
import io
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

IMAGE_REF = "docker.io/library/mokka-busybox:test"
K8S_NAMESPACE = "k8s.io"
FETCH_SCRIPT = ".ci/fetch-runtime.sh"
PATH_KEYS = (
    "CONTAINERD",
    "CTR",
    "CONTAINERD_SHIM",
    "RUNC",
    "CRI_API_PROTO",
    "NRI_API_PROTO",
    "CDI_SCHEMA_DIR",
    "BUSYBOX",
)

BUSYBOX_APPLETS = (
    "sh", "ash", "ls", "cat", "env", "printenv", "sleep", "test", "[", "[[", "stat",
    "mount", "umount", "echo", "true", "false", "grep", "id", "ps", "mkdir", "rm",
    "rmdir", "readlink", "realpath", "head", "tail", "wc", "hostname", "uname", "find",
    "touch", "dd", "ln", "kill", "which", "tr", "sed", "awk", "cut", "sort", "uniq",
    "df", "mknod", "xargs", "tee", "od", "hexdump", "nproc", "basename", "dirname",
    "chmod", "chown", "cp", "mv", "date", "du", "free", "timeout", "seq", "base64",
    "sha256sum", "md5sum", "whoami", "pwd", "vi", "less", "more", "nslookup", "ip",
)


class HarnessError(RuntimeError):
    """A failure of the harness or of the runtime that is NOT a kernel refusal."""


class KernelRefusal(RuntimeError):
    """The kernel (or the sandbox this machine runs in) refuses to run containers."""


# --------------------------------------------------------------------------- paths


@dataclasses.dataclass(frozen=True)
class RuntimePaths:
    containerd: str
    ctr: str
    containerd_shim: str
    runc: str
    cri_api_proto: str
    nri_api_proto: str
    cdi_schema_dir: str
    busybox: str
    source: str  # the paths.env that was read

    @property
    def bin_dirs(self) -> list[str]:
        seen: list[str] = []
        for p in (self.containerd_shim, self.containerd, self.runc):
            d = os.path.dirname(p)
            if d not in seen:
                seen.append(d)
        return seen


def runtime_dir() -> Path:
    env = os.environ.get("MOKKA_RUNTIME_DIR")
    if env:
        return Path(env)
    return Path(os.path.expanduser("~")) / ".cache" / "mokka-runtime"


def runtime_paths() -> RuntimePaths | None:
    """Read paths.env from $MOKKA_RUNTIME_DIR or ~/.cache/mokka-runtime.

    Returns None when the file is absent or incomplete (some key missing or naming a
    path that does not exist)."""
    env_file = runtime_dir() / "paths.env"
    if not env_file.is_file():
        return None
    values: dict[str, str] = {}
    for line in env_file.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip().strip('"').strip("'")
    for key in PATH_KEYS:
        if not values.get(key) or not os.path.exists(values[key]):
            return None
    return RuntimePaths(
        containerd=values["CONTAINERD"],
        ctr=values["CTR"],
        containerd_shim=values["CONTAINERD_SHIM"],
        runc=values["RUNC"],
        cri_api_proto=values["CRI_API_PROTO"],
        nri_api_proto=values["NRI_API_PROTO"],
        cdi_schema_dir=values["CDI_SCHEMA_DIR"],
        busybox=values["BUSYBOX"],
        source=str(env_file),
    )


# --------------------------------------------------------------------------- waiting


def wait_until(
    predicate: Callable[[], Any],
    timeout: float = 10.0,
    interval: float = 0.05,
    message: str | Callable[[], str] | None = None,
    ignore: tuple[type[BaseException], ...] = (Exception,),
) -> Any:
    """Poll ``predicate`` until it returns something truthy; return that value.

    Exceptions of the ``ignore`` types raised by the predicate count as "not yet" (the
    last one is chained to the TimeoutError raised after ``timeout`` seconds); any other
    exception propagates at once."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
            last_exc = None
        except ignore as exc:  # re-raised below as the cause
            last_exc = exc
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            text = text or f"condition not met within {timeout:.1f}s"
            raise TimeoutError(text) from last_exc
        time.sleep(interval)


# --------------------------------------------------------------------------- CRI API


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
        paths = runtime_paths()
        if paths is None:
            raise HarnessError(f"no runtime: run {FETCH_SCRIPT} first")
        proto = paths.cri_api_proto
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


# --------------------------------------------------------------------------- image


def _go_arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
            "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}.get(machine, machine)


def _tarinfo(name: str, kind: bytes, mode: int, size: int = 0, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.size = size
    info.linkname = linkname
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def busybox_applets(busybox: str) -> list[str]:
    """The applets this busybox has (``busybox --list``), else BUSYBOX_APPLETS."""
    try:
        out = subprocess.run([busybox, "--list"], capture_output=True, text=True, timeout=10, check=True).stdout
        names = sorted({n.strip() for n in out.split() if n.strip() and "/" not in n})
        if names:
            return [n for n in names if n != "busybox"]
    except (OSError, subprocess.SubprocessError):
        pass
    return list(BUSYBOX_APPLETS)


def _add_tree(tar: tarfile.TarFile, root: str) -> None:
    """Every directory, file and symlink under ``root`` (docs left out), as image paths."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if os.path.relpath(os.path.join(dirpath, d), root)
                             not in ("usr/share",))
        rel_dir = os.path.relpath(dirpath, root)
        for name in dirnames + sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if os.path.islink(path):
                tar.addfile(_tarinfo(rel, tarfile.SYMTYPE, 0o777, linkname=os.readlink(path)))
            elif os.path.isdir(path):
                tar.addfile(_tarinfo(rel + "/", tarfile.DIRTYPE, 0o755))
            else:
                data = Path(path).read_bytes()
                tar.addfile(_tarinfo(rel, tarfile.REGTYPE, os.stat(path).st_mode & 0o777, len(data)),
                            io.BytesIO(data))


def _layer_bytes(busybox: str, extra_root: str | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if extra_root:
            _add_tree(tar, extra_root)
        for d in ("bin", "dev", "etc", "proc", "sys", "tmp", "root", "var", "run", "usr", "usr/bin"):
            tar.addfile(_tarinfo(d + "/", tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755))
        data = Path(busybox).read_bytes()
        tar.addfile(_tarinfo("bin/busybox", tarfile.REGTYPE, 0o755, len(data)), io.BytesIO(data))
        for applet in busybox_applets(busybox):
            tar.addfile(_tarinfo(f"bin/{applet}", tarfile.SYMTYPE, 0o777, linkname="busybox"))
        for name, text in (
            ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"),
            ("etc/group", "root:x:0:\nnogroup:x:65534:\n"),
            ("etc/hosts", "127.0.0.1 localhost\n"),
        ):
            raw = text.encode()
            tar.addfile(_tarinfo(name, tarfile.REGTYPE, 0o644, len(raw)), io.BytesIO(raw))
    return buf.getvalue()


def build_busybox_image(path: str | os.PathLike, busybox: str | None = None,
                        ref: str = IMAGE_REF, cmd: Sequence[str] = ("sleep", "3600"),
                        extra_root: str | None = None) -> Path:
    """Write a one-layer OCI image-layout tar holding /bin/busybox plus applet links.

    Its default command is ``sleep 3600`` and its name ``ref`` (stdlib only).
    ``extra_root``: a tree laid in first (e.g. Debian's libc6 unpacked: a glibc
    image with no Python)."""
    if busybox is None:
        paths = runtime_paths()
        if paths is None:
            raise HarnessError(f"no busybox: run {FETCH_SCRIPT} first")
        busybox = paths.busybox
    path = Path(path)
    blobs: dict[str, bytes] = {}

    def blob(data: bytes, media_type: str) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    layer = _layer_bytes(busybox, extra_root)
    layer_desc = blob(layer, "application/vnd.oci.image.layer.v1.tar")
    arch = _go_arch()
    config = {
        "architecture": arch,
        "os": "linux",
        "config": {
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "Cmd": list(cmd),
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
        "history": [{"created_by": "mokka tests/integration/runtime.py build_busybox_image"}],
    }
    config_desc = blob(json.dumps(config, sort_keys=True).encode(), "application/vnd.oci.image.config.v1+json")
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config_desc,
        "layers": [layer_desc],
    }
    manifest_desc = blob(json.dumps(manifest, sort_keys=True).encode(), "application/vnd.oci.image.manifest.v1+json")
    manifest_desc["platform"] = {"architecture": arch, "os": "linux"}
    manifest_desc["annotations"] = {
        "io.containerd.image.name": ref,
        "org.opencontainers.image.ref.name": ref,
    }
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [manifest_desc]}
    files = [
        ("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
        ("index.json", json.dumps(index, sort_keys=True).encode()),
    ] + [(f"blobs/sha256/{d.split(':', 1)[1]}", data) for d, data in blobs.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("blobs/", "blobs/sha256/"):
            tar.addfile(_tarinfo(d, tarfile.DIRTYPE, 0o755))
        for name, data in files:
            tar.addfile(_tarinfo(name, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
    os.replace(tmp, path)
    return path


# --------------------------------------------------------------------------- kernel probes

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
MNT_DETACH = 2


def overlay_supported(scratch: str | os.PathLike) -> tuple[bool, str]:
    """Try an overlay mount in ``scratch`` the way containerd's overlayfs plugin checks."""
    base = Path(tempfile.mkdtemp(prefix="ovl-probe-", dir=scratch))
    try:
        for d in ("lower1", "lower2", "upper", "work", "merged"):
            (base / d).mkdir()
        opts = f"lowerdir={base}/lower2:{base}/lower1,upperdir={base}/upper,workdir={base}/work"
        rc = _libc.mount(b"overlay", str(base / "merged").encode(), b"overlay", 0, opts.encode())
        if rc != 0:
            err = ctypes.get_errno()
            return False, f"overlay mount failed: {os.strerror(err)} (errno {err})"
        _libc.umount2(str(base / "merged").encode(), MNT_DETACH)
        return True, "ok"
    finally:
        shutil.rmtree(base, ignore_errors=True)


# Error texts from runc/containerd that mean "the kernel or sandbox refuses", not "our bug".
KERNEL_REFUSAL_PATTERNS = (
    r"unshare.*operation not permitted",
    r"clone.*operation not permitted",
    r"pivot_root.*(invalid argument|operation not permitted)",
    r"(mount|mounting).*(operation not permitted|permission denied|no such device)",
    r"cgroup.*(read-only file system|operation not permitted|mountpoint does not exist|no cgroup mount)",
    r"seccomp.*(not supported|invalid argument|function not implemented)",
    r"namespace.*(not supported|invalid argument)",
    r"function not implemented",
)


def kernel_refusal_reason(text: str) -> str | None:
    """Return the matching pattern if ``text`` is a kernel/sandbox refusal, else None."""
    for pattern in KERNEL_REFUSAL_PATTERNS:
        m = re.search(pattern, text, re.IGNORECASE | re.DOTALL)
        if m:
            return m.group(0)[:300]
    return None


# --------------------------------------------------------------------------- containerd


def _toml_str(value: str) -> str:
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def _toml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(_toml_str(v) for v in values) + "]"


_IMAGE_CACHE: dict[tuple[str, str], Path] = {}


class Containerd:
    """A real containerd running in a scratch folder, CRI + NRI enabled.

    ``Containerd(paths, workdir, enable_cdi=False, cdi_spec_dirs=None)`` starts it
    (use ``start=False`` to only write the configuration). Sockets live in a short
    folder under /tmp (unix socket paths are limited to 107 bytes); root, state, logs
    and CNI/CDI/NRI folders live in ``workdir``.

    Attributes: ``cri_socket`` (= containerd's gRPC address), ``ttrpc_socket``,
    ``nri_socket``, ``nri_plugin_dir`` (pre-launched plugins, NN-name),
    ``nri_conf_dir``, ``cdi_spec_dirs``, ``snapshotter``, ``config_path``,
    ``log_path``, ``cgroup_parent``, ``image_ref``, ``pid``.
    """

    def __init__(
        self,
        paths: RuntimePaths,
        workdir: str | os.PathLike,
        *,
        enable_cdi: bool = False,
        cdi_spec_dirs: Sequence[str | os.PathLike] | None = None,
        snapshotter: str | None = None,
        log_level: str = "info",
        nri: bool = True,
        start: bool = True,
        start_timeout: float = 20.0,
        image_ref: str = IMAGE_REF,
    ):
        self.paths = paths
        self.workdir = Path(workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.sockdir = Path(tempfile.mkdtemp(prefix="mkctr-", dir="/tmp"))
        self.cri_socket = str(self.sockdir / "containerd.sock")
        self.ttrpc_socket = str(self.sockdir / "containerd.sock.ttrpc")
        self.nri_socket = str(self.sockdir / "nri" / "nri.sock")
        self.runc_root = str(self.sockdir / "runc")  # runc's state (--root), not /run/containerd/runc
        self.root = self.workdir / "root"
        self.state = self.workdir / "state"
        self.nri_plugin_dir = self.workdir / "nri" / "plugins"
        self.nri_conf_dir = self.workdir / "nri" / "conf.d"
        self.cni_bin_dir = self.workdir / "cni" / "bin"
        self.cni_conf_dir = self.workdir / "cni" / "net.d"
        self.pod_log_root = self.workdir / "pod-logs"
        if cdi_spec_dirs is None:
            cdi_spec_dirs = [self.workdir / "cdi"]
        self.cdi_spec_dirs = [Path(d) for d in cdi_spec_dirs]
        self.enable_cdi = enable_cdi
        self.nri = nri
        self.log_level = log_level
        self.image_ref = image_ref
        self.start_timeout = start_timeout
        self.config_path = self.workdir / "config.toml"
        self.log_path = self.workdir / "containerd.log"
        self.cgroup_parent = f"/mokka-it-{uuid.uuid4().hex[:10]}"
        self.proc: subprocess.Popen | None = None
        self._log_file = None
        self._clients: list[CRIClient] = []
        self._cri: CRIClient | None = None
        self._stopped = False
        for d in (self.root, self.state, self.nri_plugin_dir, self.nri_conf_dir,
                  self.cni_bin_dir, self.cni_conf_dir, self.pod_log_root, *self.cdi_spec_dirs):
            Path(d).mkdir(parents=True, exist_ok=True)
        self.snapshotter = snapshotter or self._pick_snapshotter()
        self.write_config()
        if start:
            try:
                self.start()
            except BaseException:
                self.stop()
                raise

    # configuration -------------------------------------------------------------------
    def _pick_snapshotter(self) -> str:
        ok, why = overlay_supported(self.root)
        self.overlay_probe = why
        return "overlayfs" if ok else "native"

    def config_text(self) -> str:
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        return f"""version = 2
root = {_toml_str(self.root)}
state = {_toml_str(self.state)}
plugin_dir = ""
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
imports = []

[grpc]
  address = {_toml_str(self.cri_socket)}

[ttrpc]
  address = {_toml_str(self.ttrpc_socket)}

[debug]
  address = ""
  level = {_toml_str(self.log_level)}

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = {_toml_str(self.workdir / "opt")}

  [plugins."io.containerd.nri.v1.nri"]
    disable = {str(not self.nri).lower()}
    disable_connections = false
    plugin_config_path = {_toml_str(self.nri_conf_dir)}
    plugin_path = {_toml_str(self.nri_plugin_dir)}
    plugin_registration_timeout = "5s"
    plugin_request_timeout = "2s"
    socket_path = {_toml_str(self.nri_socket)}

  [plugins."io.containerd.transfer.v1.local"]
    [[plugins."io.containerd.transfer.v1.local".unpack_config]]
      platform = {_toml_str("linux/" + _go_arch())}
      snapshotter = {_toml_str(self.snapshotter)}

  [{cri}]
    sandbox_image = {_toml_str(self.image_ref)}
    restrict_oom_score_adj = true
    disable_apparmor = true
    enable_selinux = false
    enable_cdi = {str(self.enable_cdi).lower()}
    cdi_spec_dirs = {_toml_list(self.cdi_spec_dirs)}
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

    [{cri}.cni]
      bin_dir = {_toml_str(self.cni_bin_dir)}
      conf_dir = {_toml_str(self.cni_conf_dir)}

    [{cri}.containerd]
      snapshotter = {_toml_str(self.snapshotter)}
      default_runtime_name = "runc"

      [{cri}.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [{cri}.containerd.runtimes.runc.options]
          BinaryName = {_toml_str(self.paths.runc)}
          Root = {_toml_str(self.runc_root)}
          SystemdCgroup = false
"""

    def write_config(self) -> None:
        self.config_path.write_text(self.config_text())

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join(self.paths.bin_dirs + [env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")])
        return env

    # lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            raise HarnessError("containerd already running")
        self._stopped = False
        Path(self.nri_socket).parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab")
        self._log_file.write(f"\n===== mokka harness: starting containerd at {time.time():.3f}\n".encode())
        self._log_file.flush()
        self.proc = subprocess.Popen(
            [self.paths.containerd, "--config", str(self.config_path)],
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=self._env(),
            start_new_session=True,
        )
        self._wait_ready()
        self._ensure_image()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _wait_ready(self) -> None:
        client = self.cri

        def ready():
            if self.proc.poll() is not None:
                raise HarnessError(
                    f"containerd exited with {self.proc.returncode} during start-up; log:\n{self.log_text()[-4000:]}")
            client.version(timeout=1.0)
            return not self.nri or os.path.exists(self.nri_socket)

        import grpc

        wait_until(ready, timeout=self.start_timeout, interval=0.05, ignore=(grpc.RpcError,),
                   message=lambda: f"containerd CRI not ready within {self.start_timeout}s; log tail:\n"
                                   f"{self.log_text()[-4000:]}")

    def ctr(self, *args: str, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """Run ``ctr -a SOCK -n k8s.io ARGS...`` and return the completed process."""
        cmd = [self.paths.ctr, "-a", self.cri_socket, "-n", K8S_NAMESPACE, *args]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self._env())
        if check and res.returncode != 0:
            raise HarnessError(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
        return res

    def import_image(self, tar: str | os.PathLike, ref: str) -> None:
        """Import an OCI image tar (build_busybox_image) and wait until CRI sees ``ref``."""
        res = self.ctr("images", "import", "--snapshotter", self.snapshotter, str(tar), check=False)
        if res.returncode != 0:
            raise HarnessError(f"ctr images import failed ({res.returncode}): {res.stdout}{res.stderr}")
        wait_until(lambda: self.cri.image_call("ImageStatus", image=self.cri.pb.ImageSpec(image=ref)).image.id,
                   timeout=10, message=f"CRI does not see imported image {ref}")

    def _ensure_image(self) -> None:
        images = self.ctr("images", "ls", "-q").stdout.split()
        if self.image_ref in images:
            return
        key = (self.paths.busybox, self.image_ref)
        tar = _IMAGE_CACHE.get(key)
        if tar is None or not tar.exists():
            tar = build_busybox_image(self.workdir / "busybox-image.tar", self.paths.busybox, self.image_ref)
            _IMAGE_CACHE[key] = tar
        res = self.ctr("images", "import", "--snapshotter", self.snapshotter, str(tar), check=False)
        if res.returncode != 0:
            text = res.stdout + res.stderr
            if kernel_refusal_reason(text):
                raise KernelRefusal(f"importing the image with snapshotter {self.snapshotter} failed: {text}")
            raise HarnessError(f"ctr images import failed ({res.returncode}): {text}")
        # The CRI plugin learns about the image via an event: wait until CRI sees it.
        wait_until(lambda: self.cri.image_call("ImageStatus", image=self.cri.pb.ImageSpec(image=self.image_ref)).image.id,
                   timeout=10, message=f"CRI does not see imported image {self.image_ref}")

    @property
    def cri(self) -> CRIClient:
        """A CRI client owned by this instance (closed at stop)."""
        if self._cri is None:
            self._cri = self.client()
        return self._cri

    def client(self) -> CRIClient:
        """A new CRI client on this containerd (pods get this instance's cgroup parent)."""
        c = cri_client(self.workdir, self.cri_socket, cgroup_parent=self.cgroup_parent,
                       proto=self.paths.cri_api_proto)
        c.workdir = self.pod_log_root
        self._clients.append(c)
        return c

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _terminate(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._log_file:
            self._log_file.close()
            self._log_file = None

    def restart(self) -> None:
        """Stop containerd (SIGTERM; containers and shims keep running) and start it
        again on the same root/state/sockets; waits until CRI answers again."""
        self._terminate()
        self.start()

    def cleanup_pods(self, timeout: float = 10.0) -> list[str]:
        """Stop and remove every CRI sandbox (and so every container). Returns errors."""
        errors: list[str] = []
        if not self.running():
            return ["containerd not running"]
        try:
            pods = self.cri.list_pods()
        except Exception as exc:  # noqa: BLE001
            return [f"ListPodSandbox: {exc}"]
        for pod in pods:
            for method in ("StopPodSandbox", "RemovePodSandbox"):
                try:
                    self.cri.call(method, pod_sandbox_id=pod.id, timeout=timeout)
                except Exception as exc:  # noqa: BLE001
                    errors.append(f"{method} {pod.id[:12]}: {exc}")
        return errors

    def stop(self) -> None:
        """Remove all pods/containers it can, SIGTERM (then SIGKILL) containerd, kill
        any stray shim of this instance, unmount leftovers, remove its cgroups."""
        if self._stopped:
            return
        self._stopped = True
        if self.running():
            self.cleanup_pods()
        for c in self._clients:
            c.close()
        self._clients.clear()
        self._cri = None
        self._terminate()
        self._kill_strays()
        self._unmount_leftovers()
        self._remove_cgroups()
        shutil.rmtree(self.sockdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # leftovers -------------------------------------------------------------------------
    def _cgroup_dirs(self) -> list[Path]:
        rel = self.cgroup_parent.strip("/")
        base = Path("/sys/fs/cgroup")
        found = []
        if (base / rel).is_dir():
            found.append(base / rel)
        if base.is_dir():
            for ctl in base.iterdir():
                if (ctl / rel).is_dir():
                    found.append(ctl / rel)
        return found

    def _kill_strays(self) -> None:
        # Processes still in this instance's cgroups (containers), then its shims.
        pids: set[int] = set()
        for d in self._cgroup_dirs():
            for procs in d.rglob("cgroup.procs"):
                try:
                    pids.update(int(p) for p in procs.read_text().split())
                except OSError:
                    pass
        needle = self.cri_socket.encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"containerd-shim" in cmdline and needle in cmdline:
                pids.add(int(entry.name))
        pids.discard(os.getpid())
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if pids:
            def gone():
                return all(not os.path.exists(f"/proc/{p}") or _is_zombie(p) for p in pids)
            try:
                wait_until(gone, timeout=5)
            except TimeoutError:
                pass

    def _unmount_leftovers(self) -> None:
        prefixes = (str(self.workdir) + "/", str(self.sockdir) + "/")
        try:
            lines = Path("/proc/self/mountinfo").read_text().splitlines()
        except OSError:
            return
        targets = []
        for line in lines:
            fields = line.split()
            if len(fields) > 4:
                target = fields[4].encode().decode("unicode_escape")
                if target.startswith(prefixes):
                    targets.append(target)
        for target in sorted(targets, key=len, reverse=True):
            _libc.umount2(target.encode(), MNT_DETACH)

    def _remove_cgroups(self) -> None:
        for d in self._cgroup_dirs():
            for sub in sorted((p for p in d.rglob("*") if p.is_dir()), key=lambda p: len(str(p)), reverse=True):
                try:
                    sub.rmdir()
                except OSError:
                    pass
            try:
                d.rmdir()
            except OSError:
                pass


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


# --------------------------------------------------------------------------- CRI helpers


def _kv_list(pb, values: Mapping[str, str] | Sequence[tuple[str, str]] | None):
    if not values:
        return []
    items = values.items() if isinstance(values, Mapping) else values
    return [pb.KeyValue(key=str(k), value=str(v)) for k, v in items]


def run_pod(
    client: CRIClient,
    name: str,
    namespace: str = "default",
    annotations: Mapping[str, str] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    uid: str | None = None,
    privileged: bool = False,
    cgroup_parent: str | None = None,
    log_directory: str | os.PathLike | None = None,
    timeout: float = 60.0,
):
    """Run a host-network pod sandbox (network NODE, hostname "", own log directory,
    own cgroup parent). Returns ``(pod_id, pod_config)``; pass pod_config to
    create_container."""
    pb = client.pb
    uid = uid or uuid.uuid4().hex
    if log_directory is None:
        log_directory = Path(client.workdir) / "pods" / f"{namespace}_{name}_{uid}"
    Path(log_directory).mkdir(parents=True, exist_ok=True)
    config = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace=namespace, attempt=0),
        hostname="",
        log_directory=str(log_directory),
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        linux=pb.LinuxPodSandboxConfig(
            cgroup_parent=cgroup_parent or client.cgroup_parent,
            security_context=pb.LinuxSandboxSecurityContext(
                namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD),
                privileged=privileged,
            ),
        ),
    )
    resp = client.call("RunPodSandbox", config=config, runtime_handler="", timeout=timeout)
    return resp.pod_sandbox_id, config


def create_container(
    client: CRIClient,
    pod_id: str,
    pod_config,
    name: str,
    command: Sequence[str] | None,
    annotations: Mapping[str, str] | None = None,
    devices: Sequence[Mapping[str, str] | tuple] | None = None,
    envs: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    privileged: bool = False,
    *,
    args: Sequence[str] | None = None,
    image: str = IMAGE_REF,
    labels: Mapping[str, str] | None = None,
    mounts: Sequence[Mapping[str, Any]] | None = None,
    cdi_devices: Sequence[str] | None = None,
    timeout: float = 30.0,
) -> str:
    """Create (not start) a container in ``pod_id``; returns its id.

    ``command`` None keeps the image's (sleep 3600). ``devices``: dicts with
    container_path/host_path/permissions, or (host_path, container_path[, perms]).
    ``mounts``: dicts of CRI Mount fields. ``cdi_devices``: CDI names (CRI CDIDevice).
    A privileged container needs a pod run with ``privileged=True``."""
    pb = client.pb
    devs = []
    for d in devices or ():
        if isinstance(d, Mapping):
            devs.append(pb.Device(container_path=d.get("container_path", d.get("host_path")),
                                  host_path=d["host_path"], permissions=d.get("permissions", "rwm")))
        else:
            host, ctr_path, *perm = d
            devs.append(pb.Device(host_path=host, container_path=ctr_path, permissions=perm[0] if perm else "rwm"))
    config = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name, attempt=0),
        image=pb.ImageSpec(image=image),
        command=list(command) if command else [],
        args=list(args or []),
        envs=_kv_list(pb, envs),
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        devices=devs,
        mounts=[pb.Mount(**m) for m in (mounts or ())],
        log_path=f"{name}.log",
        linux=pb.LinuxContainerConfig(
            security_context=pb.LinuxContainerSecurityContext(
                privileged=privileged,
                namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD),
            ),
        ),
    )
    if cdi_devices:
        config.CDI_devices.extend(pb.CDIDevice(name=n) for n in cdi_devices)
    resp = client.call("CreateContainer", pod_sandbox_id=pod_id, config=config,
                       sandbox_config=pod_config, timeout=timeout)
    return resp.container_id


def start_container(client: CRIClient, container_id: str, timeout: float = 30.0) -> None:
    client.call("StartContainer", container_id=container_id, timeout=timeout)
    wait_until(lambda: container_state(client, container_id) == "CONTAINER_RUNNING"
               or container_state(client, container_id) == "CONTAINER_EXITED",
               timeout=timeout, message=f"container {container_id[:12]} did not start")


def container_state(client: CRIClient, container_id: str) -> str:
    status = client.call("ContainerStatus", container_id=container_id).status
    return client.pb.ContainerState.Name(status.state)


def container_status(client: CRIClient, container_id: str, verbose: bool = False):
    """The raw ContainerStatusResponse."""
    return client.call("ContainerStatus", container_id=container_id, verbose=verbose)


def container_spec(client: CRIClient, container_id: str) -> dict:
    """The OCI spec containerd stored for the container (ContainerStatus verbose info)."""
    resp = container_status(client, container_id, verbose=True)
    info = json.loads(resp.info["info"])
    return info["runtimeSpec"]


@dataclasses.dataclass
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def exec_sync(client: CRIClient, container_id: str, cmd: Sequence[str], timeout: int = 10) -> ExecResult:
    """Run ``cmd`` in a running container via CRI ExecSync; capture its output."""
    # ExecSyncRequest has its own "timeout" field (seconds), so build the request here.
    request = client.pb.ExecSyncRequest(container_id=container_id, cmd=list(cmd), timeout=int(timeout))
    resp = client.call("ExecSync", request, timeout=timeout + 10)
    return ExecResult(resp.exit_code, resp.stdout.decode(errors="replace"), resp.stderr.decode(errors="replace"))


def start_and_exec(client: CRIClient, container_id: str, cmd: Sequence[str], timeout: int = 10) -> ExecResult:
    """Start a created container, then ExecSync ``cmd`` in it."""
    start_container(client, container_id)
    return exec_sync(client, container_id, cmd, timeout=timeout)


def remove_pod(client: CRIClient, pod_id: str, timeout: float = 30.0) -> None:
    """Stop and remove a pod sandbox and its containers."""
    client.call("StopPodSandbox", pod_sandbox_id=pod_id, timeout=timeout)
    client.call("RemovePodSandbox", pod_sandbox_id=pod_id, timeout=timeout)


# --------------------------------------------------------------------------- CDI schema

_CDI_VALIDATORS: dict[str, Any] = {}


def cdi_validator(schema_dir: str | os.PathLike | None = None):
    """A jsonschema validator for CDI specs, from schema.json + defs.json."""
    if schema_dir is None:
        paths = runtime_paths()
        if paths is None:
            raise HarnessError(f"no CDI schema: run {FETCH_SCRIPT} first")
        schema_dir = paths.cdi_schema_dir
    schema_dir = os.path.abspath(schema_dir)
    if schema_dir in _CDI_VALIDATORS:
        return _CDI_VALIDATORS[schema_dir]
    import jsonschema
    from referencing import Registry
    from referencing.jsonschema import DRAFT7

    base = Path(schema_dir).as_uri() + "/"
    schema = json.loads((Path(schema_dir) / "schema.json").read_text())
    defs = json.loads((Path(schema_dir) / "defs.json").read_text())
    schema = {**schema, "$id": base + "schema.json"}
    registry = Registry().with_resources([
        (base + "schema.json", DRAFT7.create_resource(schema)),
        (base + "defs.json", DRAFT7.create_resource(defs)),
    ])
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    cls.check_schema(schema)
    validator = cls(schema, registry=registry, format_checker=cls.FORMAT_CHECKER)
    _CDI_VALIDATORS[schema_dir] = validator
    return validator


def validate_cdi_spec(spec: Mapping[str, Any], schema_dir: str | os.PathLike | None = None) -> None:
    """Validate a CDI spec dict; raises jsonschema.ValidationError if invalid."""
    cdi_validator(schema_dir).validate(spec)
