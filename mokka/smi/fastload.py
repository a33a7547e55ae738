"""The state.json fast path without importing ``json`` or ``hashlib``.

``json`` pulls in ``re`` (and with it enum, functools, ...) and ``hashlib``
loads OpenSSL: together about 12 ms per run on CI machines, more than
``nvidia-smi -L`` costs otherwise. The C scanner in ``_json`` and the builtin
``_sha256`` do the same work with none of that. Semantics are those of
``mokka.core.state.load_for_config``: a state JSON is used directly, a profile
YAML only when the ``state.json`` beside it carries its digest; anything else
(or an interpreter without these C modules) falls back to ``mokka.core.state``.
"""

from __future__ import annotations

import os

from mokka.core import names


class _Context:
    """What ``_json.make_scanner`` reads from a JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict = {}

    @staticmethod
    def parse_constant(name):
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


def _scan(text: str):
    import _json
    scanner = _json.make_scanner(_Context())
    obj, end = scanner(text, 0)
    if text[end:].strip():
        raise ValueError("trailing data")
    return obj


def _sha256_hex(data: bytes) -> str:
    try:
        from _sha256 import sha256            # 3.11
    except ImportError:
        from _sha2 import sha256              # 3.12+
    return sha256(data).hexdigest()


def _read_state(path: str):
    with open(path, "rb") as f:
        state = _scan(f.read().decode("utf-8"))
    if not isinstance(state, dict) or state.get("schema_version") != names.STATE_SCHEMA_VERSION:
        return None
    return state


def load_for_config(config_path: str) -> dict:
    try:
        if config_path.endswith(".json"):
            state = _read_state(config_path)
        else:
            state = _read_state(os.path.join(os.path.dirname(config_path), names.STATE_FILE))
            if state is not None:
                with open(config_path, "rb") as f:
                    digest = "sha256:" + _sha256_hex(f.read())
                if (state.get("profile") or {}).get("digest") != digest:
                    state = None
        if state is not None:
            return state
    except (OSError, ValueError, ImportError, StopIteration, UnicodeDecodeError, KeyError):
        pass
    from mokka.core import state as core_state          # the slow, complete path
    return core_state.load_for_config(config_path)


def locate(environ, argv0: str | None) -> str:
    """``mokka.core.state.locate`` without importing json/hashlib on success."""
    configured = environ.get(names.ENV_NVML_CONFIG)
    if configured and os.path.exists(configured):
        return configured
    if not configured and argv0:
        here = os.path.dirname(os.path.abspath(argv0))
        tail = os.path.normpath(names.DRIVER_BIN_DIR)
        if here.endswith(os.sep + tail):
            candidate = os.path.join(here[: -len(tail) - 1], names.DRIVER_CONFIG_DIR, names.PROFILE_FILE)
            if os.path.exists(candidate):
                return candidate
    from mokka.core import state as core_state          # for its exact error message
    return core_state.locate(environ, argv0)
