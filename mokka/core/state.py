"""Find and load the compiled engine state — the shims' fast path.

Given ``MOCK_NVML_CONFIG`` (a compiled ``state.json`` or a profile YAML), or the
location of the running entry point inside an overlay, return the state dict.
The staged ``config.yaml`` has a ``state.json`` beside it stamped with the
YAML's digest: when it matches, the state is used as is; compiling (and
importing yaml) is the fallback.

nvidia-smi runs every few seconds under monitoring agents, so this path avoids
even ``json`` (which pulls in ``re``, ``enum``, ...) and ``hashlib`` (OpenSSL):
together they cost more than the rest of ``nvidia-smi -L``. The C scanner of
``_json`` and the builtin ``_sha256`` do the same work; on an interpreter
without them the standard modules are used.
"""

from __future__ import annotations

import os

from mokka.core import names


class StateError(Exception):
    pass


class _ScanContext:
    """The attributes ``_json.make_scanner`` reads from a JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict = {}

    @staticmethod
    def parse_constant(name):
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


def _parse_json(data: bytes):
    text = data.decode("utf-8")
    try:
        import _json
    except ImportError:
        import json
        return json.loads(text)
    try:
        obj, end = _json.make_scanner(_ScanContext())(text, 0)
    except StopIteration:
        raise ValueError("not a JSON document") from None
    if text[end:].strip():
        raise ValueError("trailing data after the JSON document")
    return obj


def _sha256_hex(data: bytes) -> str:
    try:
        from _sha256 import sha256            # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256          # CPython 3.12+
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def digest_of(path: str) -> str:
    """Digest of a regular file within the profile size bound; OSError for anything else
    (a FIFO or /dev/zero named as the config must not hang or fill memory here)."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > names.MAX_DOCUMENT_BYTES:
            raise OSError(f"{path}: not a regular file within {names.MAX_DOCUMENT_BYTES} bytes")
        return "sha256:" + _sha256_hex(f.read(names.MAX_DOCUMENT_BYTES + 1))


def load_json(path: str) -> dict:
    with open(path, "rb") as f:
        try:
            state = _parse_json(f.read())
        except (ValueError, UnicodeDecodeError) as exc:
            raise StateError(f"{path}: not valid JSON ({exc}); re-stage the node") from None
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
        if state.get("profile", {}).get("digest") == digest_of(config_path):
            return state
    except (OSError, StateError):
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
