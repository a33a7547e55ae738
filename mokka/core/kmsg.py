"""Which kernel log a command's Xid line may go to (pure).

The node agent announces Xids on its kernel log (``--kmsg-path``, /dev/kmsg, under its
``--host-root``) and records, in the staged driver root (names.DRIVER_KMSG_RECORD), that
path and the overlay's, both as host paths before the root. ``mokka ctl xid`` finds the
node through a file of its config directory; from where it sees the overlay it works
out the host root in its own view of the filesystem, and so the node's kernel log: the
scratch root's under a scratch root, the host's on a real node (or from the host of a
pod that mounts it at /host), none in a container that sees the tree at its mount path.
A command never writes a kernel log the user did not name or the node does not keep.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from mokka.core import names
from mokka.core.overlay import under

#: The longest record read.
RECORD_LIMIT = 8192


@dataclass(frozen=True)
class Record:
    kmsg: str                  # the kernel log, a host path before --host-root
    overlay: str               # the overlay (--overlay-host-path), likewise


def render_record(kmsg: str, overlay: str) -> bytes:
    return (json.dumps({"kmsg": kmsg, "overlay": overlay}) + "\n").encode()


def _host_path(value) -> bool:
    return isinstance(value, str) and value.startswith("/") and value.isprintable()


def parse_record(data: bytes | None) -> Record | None:
    """The record ``render_record`` wrote, or None for no record or anything else."""
    if not data or len(data) > RECORD_LIMIT:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not (_host_path(doc.get("kmsg")) and _host_path(doc.get("overlay"))):
        return None
    return Record(os.path.normpath(doc["kmsg"]), os.path.normpath(doc["overlay"]))


def overlay_root_of(node_file: str) -> str | None:
    """The overlay root above a file of one of the node's config directories
    (names.NODE_CONFIG_DIRS), as this process sees it; None for any other place."""
    config_dir = os.path.dirname(os.path.normpath(os.path.abspath(node_file)))
    for rel in names.NODE_CONFIG_DIRS:
        if config_dir.endswith("/" + rel):
            return config_dir[: -len(rel) - 1] or "/"
    return None


def record_path(node_file: str) -> str:
    """Where the agent's record is, for a file of the node's config directory."""
    overlay = overlay_root_of(node_file)
    if overlay is None:                  # not a staged layout: beside the config directory
        return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(node_file))),
                            names.KMSG_RECORD_NAME)
    return os.path.join(overlay, names.DRIVER_KMSG_RECORD)


def host_root_of(overlay_root: str, overlay_host_path: str) -> str | None:
    """The host root that puts ``overlay_host_path`` at ``overlay_root`` in this process's
    view (``/x/var/lib/nvml-mock`` -> ``/x``), or None: the tree is seen elsewhere."""
    if overlay_root == overlay_host_path:
        return "/"
    if overlay_root.endswith(overlay_host_path) and overlay_host_path != "/":
        return overlay_root[: -len(overlay_host_path)] or "/"
    return None


@dataclass(frozen=True)
class Target:
    path: str | None           # the kernel log to append to; None: none
    why: str                   # how that was decided, for the one line the command prints


def target(named: str | None, record: Record | None, node_file: str) -> Target:
    """The kernel log ``mokka ctl xid`` may append to, for the node it found through
    ``node_file``: the one the user named, else the node's, else none."""
    if named:
        return Target(named, "named by --kmsg-path")
    where = record_path(node_file)
    if record is None:
        return Target(None, f"no node agent recorded a kernel log in {where}; name one with --kmsg-path")
    overlay = overlay_root_of(node_file)
    host_root = host_root_of(overlay, record.overlay) if overlay is not None else None
    if host_root is None:
        return Target(None, f"the node's kernel log is not visible from here: this process sees its "
                            f"tree at {overlay or os.path.dirname(node_file)}, its agent staged it at "
                            f"{record.overlay} under its host root; name one with --kmsg-path")
    return Target(under(host_root, record.kmsg), f"the node's, as its agent recorded it in {where}")
