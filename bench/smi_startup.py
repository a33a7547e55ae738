"""Startup cost of the staged nvidia-smi vs a bare interpreter.

Stages an overlay for the default 8-GPU profile in a temp dir, creates a fresh
venv there, then times (warm, N runs each, medians):

  baseline       <fresh venv>/bin/python -c pass  (that venv's bin/ first on PATH for all)
  -L             <overlay>/driver/usr/bin/nvidia-smi -L
  -q -x          <overlay>/driver/usr/bin/nvidia-smi -q -x
  python -m      python -m mokka nvidia-smi -L   (for reference; not a target)
  floor          python -S: import ctypes, load the library, nvmlInit and one call
                 (what any client of the library pays before it asks anything: the
                 cost a single private "dump the node" export could not go below)

Targets: -L <= 2x baseline, -q -x <= 3x baseline.

    python bench/smi_startup.py [-n RUNS]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from common import build_native_libraries, build_zipapp, fresh_venv_python, require_test_environment, time_command  # noqa: E402

require_test_environment()

from mokka.core import compile as comp  # noqa: E402
from mokka.core import launcher, names  # noqa: E402
from mokka.engine import flatstate, native  # noqa: E402
from mokka.core import profile as prof  # noqa: E402


FLOOR = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); lib.nvmlInit_v2(); "
         "buf = ctypes.create_string_buffer(4096); lib.nvmlMokkaGetNodePath(0, buf, 4096)")


def stage(root: str) -> str:
    """The overlay as the agent stages it: the package and launchers, the library, the
    profile and its companion; the profile's path."""
    launcher.stage(root)
    loaded = prof.load(names.DEFAULT_PROFILE)
    cfg = os.path.join(root, names.DRIVER_CONFIG_DIR)
    os.makedirs(cfg, exist_ok=True)
    profile = os.path.join(cfg, names.PROFILE_FILE)
    with open(profile, "wb") as f:
        f.write(loaded.text)
    with open(flatstate.companion_path(profile), "wb") as f:
        f.write(flatstate.state_companion(comp.compile_profile(loaded)))
    lib = os.path.join(root, names.DRIVER_LIB_DIR)
    os.makedirs(lib, exist_ok=True)
    shutil.copy(native.nvml_library(), os.path.join(lib, names.NVML_LIB_FILE))
    return profile


def timed(cmd: list, env: dict, runs: int) -> float:
    """Median seconds of ``runs`` warm runs."""
    return statistics.median(time_command(cmd, runs, warmup=1, env=env)) / 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=30)
    opts = ap.parse_args()
    build_native_libraries()
    with tempfile.TemporaryDirectory(prefix="mokka-bench-") as tmp:
        root = os.path.join(tmp, "overlay")
        config = stage(root)
        dev_root = os.path.join(tmp, "devroot")
        os.makedirs(dev_root)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_")}
        env[names.ENV_DEV_ROOT] = dev_root
        smi = os.path.join(root, names.DRIVER_BIN_DIR, "nvidia-smi")
        python = fresh_venv_python()
        # The staged launcher runs the python3 on PATH: the baseline's own, as a container's
        # /usr/bin/python3 would be, not a version manager's shim (pyenv's is a bash script).
        env["PATH"] = os.path.dirname(python) + os.pathsep + env.get("PATH", "")
        base = timed([python, "-c", "pass"], env, opts.runs)
        lst = timed([smi, "-L"], env, opts.runs)
        qx = timed([smi, "-q", "-x"], env, opts.runs)
        menv = dict(env, **{names.ENV_NVML_CONFIG: config})
        mod = timed([sys.executable, "-m", "mokka", "nvidia-smi", "-L"], menv, opts.runs)
        floor = timed([sys.executable, "-S", "-c", FLOOR, os.path.join(root, names.DRIVER_LIB_DIR,
                                                                        names.NVML_LIB_FILE)], env, opts.runs)
        # dist/mokka reached through a link named nvidia-smi (the zipapp's own bootstrap)
        app = build_zipapp()
        link = os.path.join(tmp, "nvidia-smi")
        os.symlink(app, link)
        zenv = dict(menv, SHIV_ROOT=os.path.join(tmp, "shiv-root"))
        zipped = timed([link, "-L"], zenv, opts.runs)
    print(f"profile {names.DEFAULT_PROFILE}, {opts.runs} warm runs each, medians")
    print(f"  fresh venv python -c pass      {base * 1000:7.1f} ms")
    print(f"  staged nvidia-smi -L           {lst * 1000:7.1f} ms  {lst / base:4.2f}x  (target <= 2x)")
    print(f"  staged nvidia-smi -q -x        {qx * 1000:7.1f} ms  {qx / base:4.2f}x  (target <= 3x)")
    print(f"  python -m mokka nvidia-smi -L  {mod * 1000:7.1f} ms  {mod / base:4.2f}x  (reference)")
    print(f"  floor: ctypes, load, init      {floor * 1000:7.1f} ms  {floor / base:4.2f}x  (reference)")
    print(f"  zipapp link nvidia-smi -L      {zipped * 1000:7.1f} ms  {zipped / base:4.2f}x  (reference)")
    return 0 if lst / base <= 2 and qx / base <= 3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
