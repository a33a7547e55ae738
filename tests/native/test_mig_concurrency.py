"""Eight threads in four processes create and destroy MIG instances on one GPU at once, and
the node's partitions stay one truth: every thread destroys exactly what it created (no
change of another process lost, no id handed out twice), and the GPU ends empty.

Bounded by count (rounds per thread) and by time (each process stops starting rounds after
its deadline); nothing here measures time.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.native import mig_nodes as mn
from tests.native.conftest import clean_env

PROCESSES, THREADS, ROUNDS, SECONDS = 4, 2, 25, 60


def test_eight_threads_in_four_processes_leave_one_consistent_state(nvml_lib, tmp_path):
    env = mn.board(str(tmp_path), "h100")
    mn.enable(nvml_lib, env)
    procs = [subprocess.Popen([sys.executable, mn.PROBE, "churn", "0", str(THREADS), str(ROUNDS), str(SECONDS)],
                              env=clean_env(nvml_lib, env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(PROCESSES)]
    logs = []
    for proc in procs:
        out, err = proc.communicate(timeout=SECONDS + 120)
        assert proc.returncode == 0, err
        assert "mock NVML" not in err, err            # no change refused, no file ignored
        logs += json.loads(out)["threads"]
    assert len(logs) == PROCESSES * THREADS
    assert [log["bad"] for log in logs] == [[]] * len(logs)
    assert all(log["created"] == log["destroyed"] for log in logs)
    assert sum(log["created"] for log in logs) >= PROCESSES * THREADS   # they did run
    gpu = mn.probe(nvml_lib, env, "state")["gpus"][0]
    assert (gpu["mode"], gpu["gpu_instances"], gpu["devices"]) == ([1, 1], [], [])
    done = mn.nvidia_smi(nvml_lib, env, "mig", "-lgi")
    assert (done.returncode, done.stdout) == (mn.NOT_FOUND, "No GPU instances found: Not Found\n")
