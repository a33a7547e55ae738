"""The one line a mig.nvml the library ignores is named in: a sentence whatever the
reason, whether the file cannot be used as a whole ("it has no digest line") or holds
something no node can have ("it holds an unknown key")."""

from __future__ import annotations

import hashlib

import pytest

from tests.native import mig_nodes as mn
from tests.native.conftest import run_probe

HEADER = b"# mokka-nvml mig 1\n"
AFTER = ": the partitions the profile boots with apply until a MIG change rewrites it\n"


def with_digest(body: bytes) -> bytes:
    return HEADER + b"digest sha256:" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


@pytest.fixture(scope="module")
def node(tmp_path_factory) -> dict:
    return mn.board(str(tmp_path_factory.mktemp("mig-warning")), "h100", mig="enabled")


@pytest.mark.parametrize("data, reason", [
    (HEADER + b"gpu.0.mode 1 1\n", "it has no digest line"),
    (with_digest(b"gpu.0.colour blue\n"), "it holds an unknown key"),
    (with_digest(b"gpu.8.mode 1 1\n"), "it holds a GPU the node does not have"),
    (with_digest(b"gpu.0.gi.13 19 6:1\ngpu.0.mode 0 0\n"), "it holds GPU instances while MIG is disabled"),
    (with_digest(b"gpu.0.mode 1 1\ngpu.0.uuid GPU-99999999-0000-0000-0000-000000000000\n"),
     "it was written for other GPUs (their UUIDs differ)"),
], ids=["a file that cannot be used as a whole: what it does", "an unknown line: what it holds",
        "a GPU past the node's: what it holds", "partitions no board can be in: what it holds",
        "another node's file: what it was written for"])
def test_an_ignored_mig_file_is_named_in_one_sentence(nvml_lib, node, data, reason):
    path = mn.state_file(node)
    with open(path, "wb") as f:
        f.write(data)
    _, stderr = run_probe(nvml_lib, node, "state", probe=mn.PROBE)
    assert stderr == f"mock NVML: ignoring {path}: {reason}{AFTER}"
