"""The runtime overrides, written: one document per scope in the overrides directory.

``all.yaml`` holds what every GPU gets, ``gpu<N>.yaml`` what physical GPU N gets
(names.overrides_scope_file), each a mapping in the shape of a GPU's state, with
its compiled companion beside it: the mock NVML library reads only those, and
layers a GPU's own document over ``all`` over the profile (native/nvml/lookup.c).
Writers: ``mokka ctl set/reset``, ``mokka compile --companion`` for a document
written by hand (any YAML: flow style, anchors, JSON). Resetting a GPU removes
its two files, as NVIDIA's ``nvidia-smi -r`` does through the library.
"""

from __future__ import annotations

import os

from mokka.core import names


class OverridesError(Exception):
    pass


def scope_path(directory: str, physical_index: int | None) -> str:
    return os.path.join(directory, names.overrides_scope_file(physical_index))


def read(path: str) -> dict | None:
    """One scope's document (bounded YAML), None when absent or empty."""
    from mokka.core import fsutil, yamlio

    try:
        text = fsutil.read_bounded(path, names.MAX_DOCUMENT_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, fsutil.ReadRefused) as exc:
        raise OverridesError(f"cannot read overrides {path}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    if not text.strip():
        return None
    try:
        doc = yamlio.safe_load(text)
    except yamlio.YAMLError:
        raise OverridesError(f"ignoring overrides {path}: invalid YAML") from None
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise OverridesError(f"ignoring overrides {path}: not a mapping of GPU fields")
    return doc


def deep_merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = value
    return base


def update(directory: str, physical_index: int, change: dict) -> None:
    """Deep-merge ``change`` into GPU ``physical_index``'s document, under the directory's lock."""
    from mokka.core.fsutil import dir_locked

    os.makedirs(directory, exist_ok=True)
    path = scope_path(directory, physical_index)
    with dir_locked(path):
        try:
            doc = read(path) or {}
        except OverridesError:
            doc = {}                       # a broken document is replaced, as a fresh start
        write(path, deep_merge(doc, change))


def reset(directory: str, physical_indices: list) -> bool:
    """Drop the named GPUs' documents; True if one was there."""
    removed = False
    for index in physical_indices:
        removed |= _remove_pair(scope_path(directory, index))
    return removed


def clear(directory: str) -> None:
    """Every override gone: ``all`` and every GPU's document (other files stay)."""
    try:
        entries = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in entries:
        stem, dot, suffix = name.rpartition(".")
        if dot and suffix == "yaml" and is_scope(stem):
            _remove_pair(os.path.join(directory, name))


def is_scope(stem: str) -> bool:
    """``all`` or ``gpu<N>``: the names of the documents the library reads."""
    number = stem[len(names.OVERRIDES_GPU_SCOPE_PREFIX):]
    return stem == names.OVERRIDES_ALL_SCOPE or (
        stem.startswith(names.OVERRIDES_GPU_SCOPE_PREFIX) and number.isdigit() and number.isascii())


def _remove_pair(path: str) -> bool:
    """The YAML first: a companion without its YAML counts as no document."""
    from mokka.core import flatstate

    removed = False
    for name in (path, flatstate.companion_path(path)):
        try:
            os.unlink(name)
            removed = True
        except FileNotFoundError:
            pass
    return removed


def write(path: str, doc: dict) -> None:
    """Write one scope's document and its companion (``gpu3.nvml``)."""
    import yaml

    write_text(path, yaml.safe_dump(doc, sort_keys=False).encode(), doc)


def write_text(path: str, text: bytes, doc: dict | None = None) -> None:
    """Write a scope's YAML as given and its compiled companion, in one step.

    The companion is renamed into place first, the YAML last, so a reader never
    sees a new YAML next to an old companion for longer than one rename.
    """
    from mokka.core import flatstate
    from mokka.core.fsutil import atomic_write

    if doc is None:
        from mokka.core import yamlio
        doc = yamlio.safe_load(text)
    atomic_write(flatstate.companion_path(path), flatstate.overrides_companion(doc, text), 0o644)
    atomic_write(path, text, 0o644)
