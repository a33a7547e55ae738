"""Eight threads init, query and shut down at once: no crash, and all see the same GPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from mokka.core import names
from tests.corpus import engine_cases as corpus
from tests.native.conftest import PROBE, clean_env

THREADS = 8
ROUNDS = 150


def test_eight_threads_never_crash_or_disagree(nvml_lib, tmp_path):
    case = corpus.Case("threads", "gb300", (), env={names.ENV_NVML_VISIBLE_DEVICES: "1,4,6"})
    env = corpus.stage(case, str(tmp_path))
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    proc = subprocess.Popen([sys.executable, PROBE, "threads", str(THREADS), str(ROUNDS)],
                            env=clean_env(nvml_lib, env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    n = 0
    while proc.poll() is None:          # swap the overrides layer under the readers
        corpus.write_overrides(config_dir, {None: f"utilization:\n  gpu: {n % 100}\n"})
        n += 1
        time.sleep(0.05)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["after"] == 1                      # every init was matched by a shutdown
    rows = {row for seen in result["results"] for row in seen}
    assert len(rows) == 1, rows                      # all threads, all rounds: one answer
    row = json.loads(rows.pop())
    assert row[0] == 3
    assert [(uuid, index) for uuid, index, *_ in row[1:]] == [
        ("GPU-b300b300-0000-0000-0000-000000000001", 0),
        ("GPU-b300b300-0000-0000-0000-000000000004", 1),
        ("GPU-b300b300-0000-0000-0000-000000000006", 2)]
    assert {tuple(r[4:]) for r in row[1:]} == {(0, 3, 0)}   # fabric: SUCCESS, completed, clique 0
    assert err == ""
