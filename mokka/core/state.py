"""Find and load the compiled engine state — the shims' fast path.

Given ``MOCK_NVML_CONFIG`` (a compiled ``state.json`` or a profile YAML), or the
location of the running entry point inside an overlay, return the state dict.
The staged ``config.yaml`` has a ``state.json`` beside it stamped with the
YAML's digest: when it matches, only ``json`` and ``hashlib`` are imported;
compiling (and importing yaml) is the fallback.
"""

from __future__ import annotations

import hashlib
import json
import os

from mokka.core import names


class StateError(Exception):
    pass


def _digest_of(path: str) -> str:
    with open(path, "rb") as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()


def load_json(path: str) -> dict:
    with open(path, "rb") as f:
        state = json.loads(f.read())
    if not isinstance(state, dict) or state.get("schema_version") != names.STATE_SCHEMA_VERSION:
        raise StateError(f"{path}: not a Mokka engine state of schema "
                         f"{names.STATE_SCHEMA_VERSION}; re-stage the node or pass a profile")
    return state


def load_for_config(config_path: str) -> dict:
    """State for a ``MOCK_NVML_CONFIG`` value (state JSON or profile YAML)."""
    if config_path.endswith(".json"):
        return load_json(config_path)
    beside = os.path.join(os.path.dirname(config_path), names.STATE_FILE)
    try:
        state = load_json(beside)
        if state.get("profile", {}).get("digest") == _digest_of(config_path):
            return state
    except (OSError, ValueError, StateError):
        pass
    return compile_path(config_path)


def compile_path(config_path: str) -> dict:
    """Fallback: compile a profile YAML in-process (imports yaml)."""
    from mokka.core import compile as comp
    from mokka.core import profile as prof

    try:
        return comp.compile_profile(prof.load(config_path))
    except prof.ProfileError as exc:
        raise StateError(str(exc)) from None


def config_from_entry_point(argv0: str) -> str | None:
    """``…/driver/usr/bin/nvidia-smi`` → ``…/driver/config/config.yaml`` if it exists."""
    here = os.path.dirname(os.path.abspath(argv0))
    tail = os.path.normpath(names.DRIVER_BIN_DIR)
    if here.endswith(os.sep + tail):
        root = here[: -len(tail) - 1]
        candidate = os.path.join(root, names.DRIVER_CONFIG_DIR, names.PROFILE_FILE)
        if os.path.exists(candidate):
            return candidate
    return None


def locate(environ=os.environ, argv0: str | None = None) -> str:
    """The config path to use, or a StateError saying how to provide one."""
    configured = environ.get(names.ENV_NVML_CONFIG)
    if configured:
        if not os.path.exists(configured):
            raise StateError(f"{names.ENV_NVML_CONFIG}={configured} does not exist")
        return configured
    found = config_from_entry_point(argv0) if argv0 else None
    if found:
        return found
    raise StateError(f"no GPU profile found: set {names.ENV_NVML_CONFIG} to a profile or "
                     "state file, or run the nvidia-smi staged in the overlay")
