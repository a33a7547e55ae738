"""The real peers .ci/fetch-runtime.sh fetches (NVIDIA's nvidia-smi 550, nvtop,
tmux, Debian's libc6 tree): their paths from its paths.env.

A missing peer skips, loudly, unless MOKKA_REQUIRE_RUNTIME=1 (CI), where it fails.
"""

from __future__ import annotations

import os

import pytest

from tests.integration.runtime import FETCH_SCRIPT, runtime_dir


def read_paths_env() -> dict[str, str]:
    path = runtime_dir() / "paths.env"
    values: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and not key.startswith("#"):
                values[key.strip()] = value.strip().strip("'\"")
    return values


def peer(key: str) -> str:
    """The fetched file named ``key`` in paths.env (NVIDIA_SMI, NVTOP, TMUX, LIBC6_ROOT...)."""
    value = read_paths_env().get(key)
    if value and os.path.exists(value):
        return value
    reason = (f"PEER {key} NOT FETCHED: run `bash {FETCH_SCRIPT}` "
              f"(it writes {runtime_dir() / 'paths.env'})")
    if os.environ.get("MOKKA_REQUIRE_RUNTIME") == "1":
        pytest.fail(reason)
    pytest.skip("!" * 20 + " " + reason + " " + "!" * 20)
