"""The runtime overrides file: ``version: 1``, ``all: {...}``, ``devices: {"<idx>": {...}}``.

Re-read on every call (no cache: each nvidia-smi run is one process). yaml is
imported only when the file exists. Device keys are profile indices, before
visibility renumbering.
"""

from __future__ import annotations

import os


class OverridesError(Exception):
    pass


def read(path: str) -> dict | None:
    try:
        with open(path, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OverridesError(f"cannot read overrides {path}: {exc.strerror}") from None
    if not text.strip():
        return None
    from mokka.core import yamlio

    try:
        doc = yamlio.safe_load(text)
    except yamlio.YAMLError:
        raise OverridesError(f"ignoring overrides {path}: invalid YAML") from None
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise OverridesError(f"ignoring overrides {path}: not a mapping")
    return doc


def deep_merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = value
    return base


def apply(gpu: dict, doc: dict) -> None:
    """Merge ``all`` then the GPU's own bucket onto one GPU dict."""
    everyone = doc.get("all")
    if isinstance(everyone, dict):
        deep_merge(gpu, everyone)
    devices = doc.get("devices")
    if isinstance(devices, dict):
        own = devices.get(str(gpu["physical_index"]), devices.get(gpu["physical_index"]))
        if isinstance(own, dict):
            deep_merge(gpu, own)


def locked(path: str):
    """Serialize every read-modify-write of one overrides file (mokka.core.fsutil.dir_locked)."""
    from mokka.core.fsutil import dir_locked
    return dir_locked(path)


def reset(path: str, physical_indices: list) -> bool:
    """Drop the named GPUs' buckets; write atomically. True if the file changed."""
    with locked(path):
        doc = read(path)
        if not doc or not isinstance(doc.get("devices"), dict):
            return False
        devices = doc["devices"]
        removed = False
        for idx in physical_indices:
            for key in (str(idx), idx):
                if key in devices:
                    del devices[key]
                    removed = True
        if not removed:
            return False
        doc.setdefault("version", 1)
        write(path, doc, os.stat(path).st_mode & 0o7777)
        return True


def update(path: str, physical_index: int, change: dict) -> None:
    """Deep-merge ``change`` into GPU ``physical_index``'s bucket, under the lock."""
    with locked(path):
        try:
            doc = read(path) or {}
        except OverridesError:
            doc = {}                       # a broken file is replaced, as a fresh start
        doc["version"] = doc.get("version", 1)
        devices = doc.get("devices") if isinstance(doc.get("devices"), dict) else {}
        doc["devices"] = devices
        key = str(physical_index)
        own = devices.pop(physical_index, None) or devices.get(key) or {}
        devices[key] = deep_merge(own if isinstance(own, dict) else {}, change)
        write(path, doc)


def clear(path: str) -> None:
    """Every override gone: the overrides file and its companion."""
    from mokka.core import flatstate

    with locked(path):
        for name in (path, flatstate.companion_path(path)):
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass


def write(path: str, doc: dict, mode: int = 0o644) -> None:
    """Write an overrides document and its compiled companion (``overrides.nvml``)."""
    import yaml

    write_text(path, yaml.safe_dump(doc, sort_keys=False).encode(), doc, mode)


def write_text(path: str, text: bytes, doc: dict | None = None, mode: int = 0o644) -> None:
    """Write overrides YAML as given, and its compiled companion, in one step.

    Every writer goes through here: the mock NVML library reads only the
    companion, and ignores one whose digest no longer matches the YAML. The
    companion is renamed into place first, the YAML last, so a reader never sees
    a new YAML next to an old companion for longer than one rename.
    """
    from mokka.core import flatstate
    from mokka.core.fsutil import atomic_write  # tempfile: only when writing

    if doc is None:
        from mokka.core import yamlio
        doc = yamlio.safe_load(text)
    atomic_write(flatstate.companion_path(path), flatstate.overrides_companion(doc, text), mode)
    atomic_write(path, text, mode)
