"""A document pair: a YAML document and its compiled companion, published in one order.

The mock NVML library reads a document through its compiled companion
(``config.yaml`` -> ``config.nvml``, flatstate.companion_path), and takes the pair
only while the companion is its YAML's. Each file goes into place by its own
rename, so a reader can fall between the two; the order decides what it sees
there. The companion goes first and the YAML last: between the renames a reader
finds a companion no older than its YAML, which the library takes for a write in
flight and reads again (native/nvml/engine/overrides.c, flat_settle.c), while a YAML newer
than its companion is one edited by hand, reported as such. This module is where
that order is, for every writer: ``entries`` for the agent, whose file system
converges a tree in its order, and ``write`` for the commands that write the files
themselves.
"""

from __future__ import annotations

from typing import TypeVar

from mokka.core import fsutil
from mokka.engine import flatstate

T = TypeVar("T")


def entries(yaml_path: str, document: T, companion: T) -> dict[str, T]:
    """The pair as a tree in the order it is published: the companion, then the YAML.
    ``document`` and ``companion`` are whatever the writer publishes (bytes, or the
    agent's File entries)."""
    return {flatstate.companion_path(yaml_path): companion, yaml_path: document}


def publish(tree: dict[str, bytes], *, dir_fd: int | None = None) -> None:
    """Write a tree made by ``entries``, in its order: each file new (mode 0644) by its own
    rename; whatever was at either name, a directory a workload made included, gives way.
    With ``dir_fd``, the paths are names in that directory."""
    for path, data in tree.items():
        fsutil.atomic_write(path, data, 0o644, dir_fd=dir_fd, replace_dir=True)


def write(yaml_path: str, text: bytes, companion: bytes, *, dir_fd: int | None = None) -> None:
    """Publish the pair of ``yaml_path`` (``publish`` of its ``entries``)."""
    publish(entries(yaml_path, text, companion), dir_fd=dir_fd)


def write_companion(yaml_path: str, companion: bytes) -> str:
    """Publish the companion of a YAML document someone else writes (``mokka compile
    --companion``: the user's own file); the companion's path."""
    path = flatstate.companion_path(yaml_path)
    fsutil.atomic_write(path, companion)
    return path


def remove_at(dir_fd: int, yaml_name: str) -> bool:
    """Take the pair of ``yaml_name`` out of the directory ``dir_fd``, the YAML first: a
    companion without its YAML counts as no document, so a reader between the two
    removals finds none. Whatever is at either name goes, a directory or a link included
    (never what a link names). True if anything was there."""
    removed = False
    for name in (yaml_name, flatstate.companion_path(yaml_name)):
        removed |= fsutil.remove_at(dir_fd, name)
    return removed
