"""nvidia-smi (its default table, process box included) over a node whose records directory
holds 4 000 forged live records, against the same nvidia-smi over a node with 4 records,
measured in the same run, interleaved (target <= 2x): ours, and NVIDIA's 550 when fetched.

Both nodes are h100 (8 GPUs). Each has 4 processes of root holding one record each on
GPU 0; the forged node has one more process, of another user, holding 4 000 records of
GPU 0 in that user's directory (both locks of each, as a workload that writes its
directory by hand would: tests/native/records_forger.py): it lists 5 processes, the
other 4. The
library is this checkout's, built into a temp dir; ours runs from its staged launcher.

    python3 bench/process_records.py [-n RUNS]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from common import require_test_environment, time_interleaved  # noqa: E402

require_test_environment()

from mokka.core import compile as comp  # noqa: E402
from mokka.core import launcher, names  # noqa: E402
from mokka.engine import flatstate
from mokka.core import profile as prof  # noqa: E402
from tests.peers import read_paths_env  # noqa: E402

FORGER = os.path.join(REPO, "tests", "native", "records_forger.py")
FORGED = 4000
REAL = 4
NOBODY = 65534          # the forger's user: another user's junk must leave the real processes listed
TARGET = 2.0


def build_library(out: str) -> str:
    subprocess.run([sys.executable, os.path.join(REPO, "native", "build.py"), "-q", "--arch", os.uname().machine,
                    "--lib", "nvml", "--out", out], check=True)
    return os.path.join(out, os.uname().machine, names.NVML_LIB_FILE)


def stage_overlay(root: str, library: str) -> str:
    """Our nvidia-smi's launcher and package, and the library beside them; the launcher's path."""
    launcher.stage(root, (names.NVIDIA_SMI,))
    lib_dir = os.path.join(root, names.DRIVER_LIB_DIR)
    os.makedirs(lib_dir, exist_ok=True)
    shutil.copy(library, os.path.join(lib_dir, names.NVML_LIB_FILE))
    return os.path.join(root, names.DRIVER_BIN_DIR, names.NVIDIA_SMI)


def stage_node(directory: str) -> tuple[str, str]:
    """An h100 profile and its companion, and the records directory beside them."""
    loaded = prof.load("h100")
    os.makedirs(directory)
    config = os.path.join(directory, names.PROFILE_FILE)
    with open(config, "wb") as f:
        f.write(loaded.text)
    with open(flatstate.companion_path(config), "wb") as f:
        f.write(flatstate.state_companion(comp.compile_profile(loaded)))
    records = os.path.join(directory, names.PROCESS_RECORDS_DIR)
    os.mkdir(records)
    os.chmod(records, names.PROCESS_RECORDS_MODE)
    return config, records


def forge(records: str, count: int, processes: int, uid: int | None = None) -> subprocess.Popen:
    uid_args = ["--uid", str(uid)] if uid is not None else []
    proc = subprocess.Popen([sys.executable, FORGER, "hold", records, "0", str(count), str(processes), str(1 << 20),
                             b"forged".hex(), *uid_args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if not proc.stdout.readline():
        raise SystemExit("the forger failed (its stderr is above)")
    return proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=10)
    opts = ap.parse_args()
    nvidia = read_paths_env().get("NVIDIA_SMI")
    forgers: list[subprocess.Popen] = []
    results = []
    with tempfile.TemporaryDirectory(prefix="mokka-bench-records-") as tmp:
        try:
            library = build_library(os.path.join(tmp, "build"))
            ours = stage_overlay(os.path.join(tmp, "overlay"), library)
            plain_config, plain = stage_node(os.path.join(tmp, "plain"))
            forged_config, forged = stage_node(os.path.join(tmp, "forged"))
            forgers += [forge(plain, 1, REAL), forge(forged, 1, REAL), forge(forged, FORGED, 1, NOBODY)]
            env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "LD_"))}
            env[names.ENV_DEV_ROOT] = os.path.join(tmp, "devroot")
            os.makedirs(env[names.ENV_DEV_ROOT])
            # The launcher runs the python3 on PATH: this one, not a version manager's shim.
            env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
            env["LD_LIBRARY_PATH"] = os.path.dirname(library)     # NVIDIA's finds the library here
            smis = [("ours", ours)] + ([("NVIDIA 550", nvidia)] if nvidia and os.path.exists(nvidia) else [])
            for label, smi in smis:
                argvs = [["env", f"{names.ENV_NVML_CONFIG}={config}", smi] for config in (plain_config, forged_config)]
                listed = subprocess.run(argvs[1], capture_output=True, env=env, check=True).stdout
                rows = sum(re.match(rb"\|\s+0\s+N/A\s+N/A\s+\d+\s+C\s", line) is not None
                           for line in listed.splitlines())
                base, hostile = time_interleaved(argvs, opts.runs, env=env)
                results.append((label, statistics.median(base), statistics.median(hostile), rows))
        finally:
            for proc in forgers:
                proc.stdin.close()
                proc.wait()
    print(f"nvidia-smi over h100, {REAL} processes on GPU 0, {opts.runs} interleaved warm runs each, medians")
    ok = True
    for label, base, hostile, rows in results:
        ratio = hostile / base
        ok = ok and ratio <= TARGET
        print(f"  {label:<11} {REAL} records {base:7.1f} ms   +{FORGED} forged {hostile:7.1f} ms  "
              f"{ratio:4.2f}x  (target <= {TARGET:.0f}x: {'met' if ratio <= TARGET else 'MISSED'}; "
              f"{rows} process rows)")
    if len(results) == 1:
        print("  NVIDIA's nvidia-smi 550 not fetched (bash .ci/fetch-runtime.sh): ours only")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
