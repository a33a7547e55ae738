"""The mock NVML library under NVIDIA's own nvidia-smi, and nvmlInit's scaling.

Stages nodes of 8 and 64 GPUs with the real agent (``--nvidia-smi``, the binary
.ci/fetch-runtime.sh fetches from Debian non-free), then measures in one run:

  baseline     <fresh venv>/bin/python -c pass
  -L  8 GPUs   NVIDIA's staged nvidia-smi -L        target <= 0.5x baseline
  -L 64 GPUs   the same on 64 GPUs                  target <= 0.5x baseline
  init 64/8    nvmlInit_v2 + count + handle, name and UUID of every GPU + nvmlShutdown,
               timed in-process by a small C driver: the 64-GPU cost over the 8-GPU
               cost (target: linear, i.e. <= 8x)

    python bench/nvml_startup.py [-n RUNS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from common import build_native_libraries, c_compiler, fresh_venv_python, require_test_environment, runtime_peer, time_command  # noqa: E402

require_test_environment()

from mokka.agent import desired as ds  # noqa: E402
from mokka.core import names  # noqa: E402
from mokka.core import profile as prof  # noqa: E402

DRIVER = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef int (*fn0)(void);
typedef int (*fncount)(unsigned *);
typedef int (*fnhandle)(unsigned, void **);
typedef int (*fnstr)(void *, char *, unsigned);
int main(int argc, char **argv) {
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    int rounds = atoi(argv[2]);
    fn0 init = (fn0)dlsym(lib, "nvmlInit_v2"), shut = (fn0)dlsym(lib, "nvmlShutdown");
    fncount count = (fncount)dlsym(lib, "nvmlDeviceGetCount_v2");
    fnhandle handle = (fnhandle)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    fnstr name = (fnstr)dlsym(lib, "nvmlDeviceGetName"), uuid = (fnstr)dlsym(lib, "nvmlDeviceGetUUID");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int r = 0; r < rounds; r++) {
        unsigned n = 0; char buf[96]; void *h;
        if (init() != 0 || count(&n) != 0) return 3;
        for (unsigned i = 0; i < n; i++) {
            if (handle(i, &h) != 0 || name(h, buf, sizeof buf) != 0 || uuid(h, buf, sizeof buf) != 0)
                return 4;
        }
        shut();
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / rounds / 1000.0);
    return 0;
}
"""


def agent(root: str, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "mokka", "node-agent", "--host-root", root,
                    "--health-addr", "", "--log-level", "error", *args],
                   check=True, env=dict(os.environ, PYTHONPATH=REPO))


def stage(tmp: str, count: int, nvidia_smi: str) -> str:
    _, text = prof.read("h100")
    path = os.path.join(tmp, f"h100x{count}.yaml")
    with open(path, "wb") as f:
        f.write(ds.with_num_devices(text, count))
    root = os.path.join(tmp, f"node{count}")
    agent(root, "--once", "--profile", path, "--nvidia-smi", nvidia_smi)
    return os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/"))


def init_cost(driver: str, overlay: str, env: dict, runs: int) -> float:
    lib = os.path.join(overlay, names.DRIVER_LIB_DIR, names.NVML_LIB_FILE)
    samples = [float(subprocess.run([driver, lib, "200"], check=True, env=env, capture_output=True,
                                    text=True).stdout) for _ in range(max(3, runs // 5))]
    return statistics.median(samples)


def measure(tmp: str, nvidia_smi: str, compiler: str, runs: int):
    overlays = {n: stage(tmp, n, nvidia_smi) for n in (8, 64)}
    dev_root = os.path.join(tmp, "devroot")
    os.makedirs(dev_root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "LD_"))}
    env[names.ENV_DEV_ROOT] = dev_root
    driver = os.path.join(tmp, "init-driver")
    with open(driver + ".c", "w") as f:
        f.write(DRIVER)
    subprocess.run([compiler, "-O2", "-o", driver, driver + ".c", "-ldl"], check=True)
    base = statistics.median(time_command([fresh_venv_python(), "-c", "pass"], runs, env=env))
    smi = {n: statistics.median(time_command([os.path.join(o, names.DRIVER_BIN_DIR, "nvidia-smi"), "-L"],
                                             runs, env=env))
           for n, o in overlays.items()}
    init = {n: init_cost(driver, o, env, runs) for n, o in overlays.items()}
    return base, smi, init


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=30)
    opts = ap.parse_args()
    compiler = c_compiler()
    nvidia_smi = runtime_peer("NVIDIA_SMI")
    build_native_libraries()
    with tempfile.TemporaryDirectory(prefix="mokka-bench-nvml-") as tmp:
        try:
            base, smi, init = measure(tmp, nvidia_smi, compiler, opts.runs)
        finally:                      # the agent bind-mounts /run/nvidia/driver: undo it
            for count in (8, 64):
                if os.path.isdir(os.path.join(tmp, f"node{count}")):
                    agent(os.path.join(tmp, f"node{count}"), "--teardown")
    ok = True
    print(f"{opts.runs} warm runs each, medians")
    print(f"  fresh venv python -c pass            {base:7.2f} ms")
    for n in (8, 64):
        ratio = smi[n] / base
        ok &= ratio <= 0.5
        print(f"  NVIDIA nvidia-smi -L, {n:2d} GPUs        {smi[n]:7.2f} ms  {ratio:4.2f}x  "
              f"(target <= 0.5x: {'met' if ratio <= 0.5 else 'MISSED'})")
    scale = init[64] / init[8]
    ok &= scale <= 8
    print(f"  nvmlInit..names..Shutdown,  8 GPUs    {init[8]:7.1f} us")
    print(f"  nvmlInit..names..Shutdown, 64 GPUs    {init[64]:7.1f} us  {scale:4.2f}x the 8-GPU cost "
          f"(target linear <= 8x: {'met' if scale <= 8 else 'MISSED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
