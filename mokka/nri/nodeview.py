"""The node view: what the node agent has staged, read from the host for the decision.

``mokka.nri.inject`` never touches the disk; this module is its I/O side. It
turns the staged tree into a ``NodeView``: the /dev/nvidia* char nodes, the
IMEX channel nodes, the CDI specs (presence, and their edits for runtimes
that cannot take a CDI reference), which preload shims exist, whether the
topology document is staged, and how many HCAs the IB sysfs tree holds.

It runs before every adjustment, so it must be cheap when nothing changed:
each fact is derived from one directory (or file) and recomputed only when
that path's stat signature moves. While inotify reported nothing on those
directories (``mokka.nri.watch``) not even the signatures are taken: the
last view stands after one ``poll``, for at most ``REVALIDATE_S`` (mounts
raise no event), then one stat per path says whether it still does. A node has up to 2048 IMEX channels; they
are listed and stat'ed once per change of their directory, not per request.
A signature taken within ``racy_window_ns`` of the path's own timestamp is
not trusted (git's "racily clean" rule): a second change inside the same
timestamp tick would otherwise go unseen.

Each view carries a generation: the builder moves it whenever what it saw
changes, and hands back the very same view while nothing did, so the driver
can key what it remembers on it (``mokka.nri.memo``).

Entries that are not character devices are skipped, including the empty
regular files an unprivileged agent stages on a bare test host: a node the
runtime cannot create is not a device.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import stat
import threading
import time
from types import MappingProxyType
from typing import Any, Callable, Mapping

from mokka.core import cdi, log, names
from mokka.core.mig import cap_node_name
from mokka.core.overlay import Overlay, container_overlay
from mokka.nri import watch
from mokka.nri.inject.model import Config, Device, NodeView

#: Where device nodes appear inside a container.
DEV_ROOT = names.CONTAINER_DEV_DIR
RACY_WINDOW_NS = 2_000_000_000
#: How long a quiet inotify alone keeps the last view: a mount over a watched
#: path (or a filesystem without events) is seen within this.
REVALIDATE_S = 1.0

_log = log.get("mokka.nri.nodeview")

# Seams for tests that count syscalls.
_stat = os.stat
_lstat = os.lstat

Signature = tuple[int, int, int, int, int] | None


def _signature(path: str) -> Signature:
    try:
        st = _stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


class _Cached:
    """One value derived from one path, recomputed only when the path's stat moves."""

    __slots__ = ("path", "compute", "signature", "value", "trusted")

    def __init__(self, path: str, compute: Callable[[], Any]):
        self.path = path
        self.compute = compute
        self.signature: Signature = None
        self.value: Any = None
        self.trusted = False

    def get(self, now_ns: int, racy_window_ns: int) -> Any:
        signature = _signature(self.path)
        if self.trusted and signature == self.signature:
            return self.value
        self.value = self.compute()
        self.signature = signature
        self.trusted = signature is None or max(signature[2], signature[3]) < now_ns - racy_window_ns
        return self.value


class NodeViewBuilder:
    """Builds ``NodeView`` snapshots from the host, cached by directory signatures.

    Empty host paths derive from ``overlay_host_path`` as the plugin's flags
    do. ``cdi_spec_dirs`` defaults to the directory of ``cdi_spec_host_path``:
    every spec there contributes edits (management devices live in their own
    spec), while only ``cdi_spec_host_path`` decides ``cdi_spec_staged``.
    Thread-safe: one build at a time.
    """

    def __init__(self, *, overlay_host_path: str = names.OVERLAY_HOST_PATH,
                 overlay_mount_path: str = names.OVERLAY_MOUNT_PATH,
                 ld_preload_shims: tuple[str, ...] = names.LD_PRELOAD_SHIMS,
                 device_host_path: str = "", imex_channel_host_path: str = "",
                 topology_host_path: str = "",
                 cdi_spec_host_path: str = posixpath.join(names.CDI_SPEC_DIR, names.CDI_SPEC_MOCK_FILE),
                 cdi_spec_dirs: tuple[str, ...] | None = None,
                 runtime_accepts_cdi: bool = False,
                 clock_ns: Callable[[], int] = time.time_ns,
                 racy_window_ns: int = RACY_WINDOW_NS,
                 inotify: bool = True):
        host = Overlay(overlay_host_path)
        self.runtime_accepts_cdi = runtime_accepts_cdi
        self._clock_ns = clock_ns
        self._racy_window_ns = racy_window_ns
        self._lock = threading.Lock()
        self._view = NodeView()

        device_dir = device_host_path or host.dev
        imex_dir = imex_channel_host_path or host.imex_channels
        topology = topology_host_path or host.topology
        ib_class = host.join(names.IB_CLASS_DIR)
        self._dev = _Cached(device_dir, lambda: _scan_char_nodes(device_dir, DEV_ROOT, _is_gpu_node_name))
        self._imex = _Cached(imex_dir, lambda: _scan_char_nodes(imex_dir, IMEX_CONTAINER_DIR, _is_channel_name))
        self._hcas = _Cached(ib_class, lambda: _count_entries(ib_class))
        self._topology = _Cached(os.path.dirname(topology), lambda: os.path.isfile(topology))
        self._caps = _Cached(host.caps, lambda: _scan_char_nodes(host.caps, CAPS_CONTAINER_DIR,
                                                                  _is_management_cap))
        proc_hook = host.proc_hook
        self._proc_hook = _Cached(os.path.dirname(proc_hook), lambda: _is_executable(proc_hook))
        self._spec_staged = _Cached(os.path.dirname(cdi_spec_host_path),
                                    lambda: bool(cdi_spec_host_path) and os.path.isfile(cdi_spec_host_path))
        if cdi_spec_dirs is None:
            cdi_spec_dirs = (os.path.dirname(cdi_spec_host_path),) if cdi_spec_host_path else ()
        self._spec_dirs = [_Cached(d, lambda d=d: _list_specs(d)) for d in cdi_spec_dirs]
        self._spec_files: dict[str, _Cached] = {}
        self._shims = _ShimView(ld_preload_shims, host, container_overlay(overlay_mount_path))
        self._watch: tuple[tuple[str, Signature], ...] = ()   # (path, signature) behind the last view
        # Every directory a cache reads (spec files live in the spec dirs).
        directories = (self._dev.path, self._imex.path, self._hcas.path, self._topology.path,
                       self._caps.path, self._proc_hook.path,
                       self._spec_staged.path, *(d.path for d in self._spec_dirs),
                       *(d.path for d in self._shims.dirs))
        self._changes = watch.ChangeWatch(directories) if inotify else None
        self._quiet_until = 0.0       # monotonic; until then a quiet inotify means unchanged

    @classmethod
    def for_config(cls, config: Config, **host_paths: Any) -> "NodeViewBuilder":
        """A builder for the decision's config; host-only paths as keywords."""
        return cls(overlay_host_path=config.overlay_host_path,
                   overlay_mount_path=config.overlay_mount_path,
                   ld_preload_shims=config.ld_preload_shims, **host_paths)

    def build(self, *, runtime_accepts_cdi: bool | None = None) -> NodeView:
        accepts = self.runtime_accepts_cdi if runtime_accepts_cdi is None else runtime_accepts_cdi
        with self._lock:
            changes = self._changes
            if self._quiet_until and accepts == self._view.runtime_accepts_cdi \
                    and changes.quiet() and time.monotonic() < self._quiet_until:
                return self._view
            self._quiet_until = 0.0
            # Watch first, then validate: a change after this leaves an event.
            watching = changes is not None and changes.arm()
            if self._unchanged(accepts):
                if watching and changes.covers(tuple(self._spec_files)):
                    self._quiet_until = time.monotonic() + REVALIDATE_S
                return self._view
            view = self._build(accepts)
            caches = (self._dev, self._imex, self._hcas, self._topology, self._caps,
                      self._proc_hook, self._spec_staged,
                      *self._spec_dirs, *self._spec_files.values(), *self._shims.dirs)
            # What the fast path compares: each path once, with the signature
            # every cache on it was computed at. Only when all are trusted and
            # agree; otherwise the next build recomputes.
            expected: dict[str, Signature] = {}
            consistent = all(cached.trusted for cached in caches)
            for cached in caches:
                if expected.setdefault(cached.path, cached.signature) != cached.signature:
                    consistent = False
            self._watch = tuple(expected.items()) if consistent else ()
            if consistent and watching and changes.covers(tuple(self._spec_files)):
                self._quiet_until = time.monotonic() + REVALIDATE_S
            return view

    def _unchanged(self, accepts: bool) -> bool:
        """The fast path, run before every decision: one stat per watched path,
        every cache trusted and its signature unmoved -> the last view."""
        if not self._watch or accepts != self._view.runtime_accepts_cdi:
            return False
        for path, signature in self._watch:
            if _signature(path) != signature:
                return False
        return True

    def _build(self, accepts: bool) -> NodeView:
        """What is staged now; the last view (its generation kept) when equal to it."""
        now, racy = self._clock_ns(), self._racy_window_ns
        view = NodeView(dev_nodes=self._dev.get(now, racy), imex_channels=self._imex.get(now, racy),
                        cdi_spec_staged=self._spec_staged.get(now, racy),
                        cdi_edits=self._cdi_edits(now, racy), staged_shims=self._shims.get(now, racy),
                        topology_staged=self._topology.get(now, racy), hca_count=self._hcas.get(now, racy),
                        runtime_accepts_cdi=accepts, mig_caps=self._caps.get(now, racy),
                        proc_hook_staged=self._proc_hook.get(now, racy),
                        generation=self._view.generation)
        if view != self._view:
            self._view = dataclasses.replace(view, generation=view.generation + 1)
        return self._view

    def _cdi_edits(self, now: int, racy: int) -> Mapping[str, tuple[cdi.CDIEdits, ...]]:
        paths = [path for spec_dir in self._spec_dirs for path in spec_dir.get(now, racy)]
        for path in paths:
            if path not in self._spec_files:
                self._spec_files[path] = _Cached(path, lambda p=path: _parse_spec_file(p))
        for gone in set(self._spec_files) - set(paths):
            del self._spec_files[gone]
        merged: dict[str, tuple[cdi.CDIEdits, ...]] = {}
        for path in paths:
            for name, value in self._spec_files[path].get(now, racy).items():
                if name in merged:
                    _log.warning("cdi device defined twice; the first spec wins", device=name, spec=path)
                    continue
                merged[name] = value
        return MappingProxyType(merged)


class _ShimView:
    """Container paths of the configured preload shims that are staged.

    A relative shim (or an absolute one inside the mount) is checked on the
    host under the overlay. An absolute path outside the overlay names a file
    of the container image, which the host cannot see: it is trusted, since
    the operator configured it explicitly.
    """

    def __init__(self, shims: tuple[str, ...], host: Overlay, mount: Overlay):
        by_dir: dict[str, list[tuple[str, str]]] = {}
        trusted: set[str] = set()
        for shim in shims:
            container_path = mount.shim(shim)
            rel = posixpath.relpath(container_path, mount.root)
            if rel == ".." or rel.startswith("../"):
                trusted.add(container_path)
                continue
            host_path = host.join(rel)
            by_dir.setdefault(os.path.dirname(host_path), []).append((container_path, host_path))
        self._trusted = frozenset(trusted)
        self.dirs = [_Cached(d, lambda pairs=pairs: frozenset(c for c, h in pairs if os.path.isfile(h)))
                     for d, pairs in by_dir.items()]

    def get(self, now: int, racy: int) -> frozenset[str]:
        return self._trusted.union(*(d.get(now, racy) for d in self.dirs))


def _natural_key(name: str) -> tuple[str, int, str]:
    """nvidia2 before nvidia10; names without a number after numbered ones."""
    stem = name.rstrip("0123456789")
    digits = name[len(stem):]
    return (stem, int(digits) if digits else -1, name)


def _char_device(path: str, container_path: str) -> Device | None:
    try:
        st = _lstat(path)
    except OSError:
        return None
    if not stat.S_ISCHR(st.st_mode):
        return None
    return Device(path=container_path, type="c", major=os.major(st.st_rdev), minor=os.minor(st.st_rdev),
                  file_mode=stat.S_IMODE(st.st_mode), uid=st.st_uid, gid=st.st_gid)


def _scan_char_nodes(directory: str, container_dir: str, wanted: Callable[[str], bool]) -> tuple[Device, ...]:
    try:
        entries = [n for n in os.listdir(directory) if wanted(n)]
    except OSError:
        return ()
    nodes = (_char_device(os.path.join(directory, n), f"{container_dir}/{n}")
             for n in sorted(entries, key=_natural_key))
    return tuple(node for node in nodes if node is not None)


def _is_gpu_node_name(name: str) -> bool:
    return name.startswith(names.GPU_NODE_PREFIX)


def _is_channel_name(name: str) -> bool:
    return name.startswith(names.IMEX_CHANNEL_PREFIX) and name[len(names.IMEX_CHANNEL_PREFIX):].isdigit()


#: Where the IMEX channel nodes appear inside a container.
IMEX_CONTAINER_DIR = f"{DEV_ROOT}/{posixpath.relpath(names.IMEX_CHANNEL_DIR, names.DEV_DIR)}"
#: Where the MIG capability nodes appear, and the two that manage every MIG device.
CAPS_CONTAINER_DIR = f"{DEV_ROOT}/{names.NVIDIA_CAPS_DEV_NAME}"
_MANAGEMENT_CAPS = frozenset(cap_node_name(minor)
                             for minor in (names.MIG_CAP_CONFIG_MINOR, names.MIG_CAP_MONITOR_MINOR))


def _is_management_cap(name: str) -> bool:
    return name in _MANAGEMENT_CAPS


def _is_executable(path: str) -> bool:
    try:
        st = _stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111)


def _count_entries(directory: str) -> int:
    try:
        return len(os.listdir(directory))
    except OSError:
        return 0


def _list_specs(directory: str) -> tuple[str, ...]:
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return ()
    return tuple(os.path.join(directory, n) for n in entries if n.endswith(cdi.SPEC_SUFFIXES))


def _parse_spec_file(path: str) -> Mapping[str, tuple[cdi.CDIEdits, ...]]:
    try:
        return cdi.read_spec(path)
    except cdi.UnreadableSpec as exc:
        _log.warning("unreadable cdi spec ignored", spec=path, error=str(exc))
        return {}
