"""``mokka ctl --help`` reads as plain text, and every verb's arguments say what they take."""

from __future__ import annotations

import pytest

from tests.conftest import run_mokka


def test_ctl_help_is_plain_text_naming_every_verb():
    done = run_mokka("ctl", "--help")
    assert done.returncode == 0, done.stderr
    assert "``" not in done.stdout and "Change a running node's GPUs without a redeploy." in done.stdout
    for verb in ("set", "reset", "status", "xid"):
        assert f"    {verb} " in done.stdout


GPU = "GPU the GPU: an index as this process sees it (inside a container that sees a subset, its own numbering) or a UUID"


@pytest.mark.parametrize("verb, phrases", [
    ("set", [GPU, "KEY=VALUE a reading and its value, e.g. temperature=85 or power=300W (keys below)",
             "keys: temperature (0..200C), memory_temperature (0..200C), power (0..10000W),"]),
    ("reset", [GPU + "; none: every GPU"]),
    ("xid", ["TARGET the GPU: an index as this process sees it (inside a container that sees a subset, its "
             "own numbering) or a UUID; or a MIG device: GPU:GI[:CI] (its GPU instance id, and compute instance "
             "id) or its MIG UUID, as nvidia-smi -L lists them", "CODE the Xid code, e.g. 79 (fallen off the bus) or 48 (double bit ECC)",
             "--kmsg-path KMSG_PATH kernel log to append the driver's line to (never created). "
             "Default: the one the node agent announces Xids on"]),
], ids=["set: the GPU, each KEY=VALUE and the keys", "reset: the optional GPU",
        "xid: the GPU or MIG device, the code and where the kernel log line goes"])
def test_each_verbs_arguments_have_help(verb, phrases):
    done = run_mokka("ctl", verb, "--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())              # whatever width argparse wrapped to
    assert [p for p in phrases if p not in text] == [], done.stdout
