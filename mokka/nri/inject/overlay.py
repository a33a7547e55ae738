"""The overlay: the staged tree bind-mounted into the container, and the
search paths (PATH, LD_LIBRARY_PATH, LD_PRELOAD) that point at it.

Shared by the GPU and InfiniBand selections, because the IB tools and shims
are staged beside the mock driver.

Two binds, in this order: the whole tree read-only, then its driver/config
directory writable on top (``nvidia-smi --gpu-reset`` writes overrides there).
Order matters: the first mount would cover the second if it came later. Both
are rprivate, the propagation a hostPath volume without mountPropagation
gets: on a container with a shared root (a Bidirectional volume) the writable
bind would otherwise be copied back onto the node with every container.
"""

from __future__ import annotations

import functools

from mokka.core import names
from mokka.core.overlay import Overlay, container_overlay
from mokka.nri.inject.draft import Draft

from mokka.nri.inject.model import Config, Mount, NodeView

BIND = "bind"
BIND_OPTIONS = ("rbind", "rprivate", "nosuid", "nodev")
READ_ONLY = "ro"


# The paths below depend on the configuration alone: computed once, not per
# container (the path joins would be a fifth of the decision's time).
@functools.lru_cache(maxsize=16)
def mounts(config: Config) -> tuple[Mount, Mount]:
    host = Overlay(config.overlay_host_path)
    mount = container_overlay(config.overlay_mount_path)
    return (
        Mount(destination=mount.root, source=host.root, type=BIND,
              options=BIND_OPTIONS + (READ_ONLY,)),
        Mount(destination=mount.driver_config, source=host.driver_config, type=BIND,
              options=BIND_OPTIONS),
    )


def staged_shims(config: Config, view: NodeView, *, pci_tree: bool = True) -> list[str]:
    """Configured shims as container paths, in flag order, staged ones only;
    libmockfs (names.FS_LIB_FILE) only with ``pci_tree``.

    Preload order is list order (a symbol defined twice resolves to the first);
    an unstaged shim is left out because ld.so prints an error for a missing
    preload in every process of the container. libmockfs shows a process the
    node's whole staged PCI tree: a container the proc hook gives its own /sys
    view goes without it, so lspci there lists what a Go reader does.
    """
    return [path for path in _shim_paths(config.overlay_mount_path, config.ld_preload_shims)
            if path in view.staged_shims and (pci_tree or not _is_pci_shim(path))]


def _is_pci_shim(path: str) -> bool:
    return path.rpartition("/")[2] == names.FS_LIB_FILE


@functools.lru_cache(maxsize=16)
def _shim_paths(mount_path: str, shims: tuple[str, ...]) -> tuple[str, ...]:
    mount = container_overlay(mount_path)
    return tuple(dict.fromkeys(mount.shim(shim) for shim in shims))     # in order, once each


@functools.lru_cache(maxsize=16)
def _search_dirs(mount_path: str) -> tuple[str, str]:
    mount = container_overlay(mount_path)
    return mount.bin, mount.lib


def attach(config: Config, view: NodeView, draft: Draft, *, pci_tree: bool = True) -> None:
    """The binds and search paths; ``pci_tree``: libmockfs among the preloads."""
    draft.add_mounts(mounts(config))
    bin_dir, lib_dir = _search_dirs(config.overlay_mount_path)
    # Prepended, so the overlay's nvidia-smi and libnvidia-ml win the search.
    draft.env.prepend(names.ENV_PATH, bin_dir, fallback=names.DEFAULT_PATH)
    draft.env.prepend(names.ENV_LD_LIBRARY_PATH, lib_dir)
    draft.env.append_preload(names.ENV_LD_PRELOAD, staged_shims(config, view, pci_tree=pci_tree))
