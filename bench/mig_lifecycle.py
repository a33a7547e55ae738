"""Creating and destroying 7 GPU instances with their compute instances through NVML, against a
fresh-venv ``python -c pass`` measured in the same run.

A small C driver loads the staged library and, per round, creates seven 1g GPU instances on
GPU 0 of an h100 node with MIG on, a compute instance in each, then destroys the compute
instances and the GPU instances: 28 changes, each a locked read-modify-write of the node's
mig.nvml that every other process then sees. Printed: one round (what mig-parted's apply of
an all-1g layout and its undo cost), and one change.

    python3 bench/mig_lifecycle.py [-n RUNS]
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

from mig_list import mig_profile, workload_env  # noqa: E402
from nvml_startup import agent  # noqa: E402

from mokka.core import names  # noqa: E402

DRIVER = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef int (*fn0)(void);
typedef int (*fnhandle)(unsigned, void **);
typedef int (*fncreate)(void *, unsigned, void **);
typedef int (*fndestroy)(void *);
int main(int argc, char **argv) {
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    int rounds = atoi(argv[2]);
    unsigned profile = (unsigned)atoi(argv[3]);
    fn0 init = (fn0)dlsym(lib, "nvmlInit_v2"), shut = (fn0)dlsym(lib, "nvmlShutdown");
    fnhandle handle = (fnhandle)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    fncreate gi_create = (fncreate)dlsym(lib, "nvmlDeviceCreateGpuInstance");
    fncreate ci_create = (fncreate)dlsym(lib, "nvmlGpuInstanceCreateComputeInstance");
    fndestroy gi_destroy = (fndestroy)dlsym(lib, "nvmlGpuInstanceDestroy");
    fndestroy ci_destroy = (fndestroy)dlsym(lib, "nvmlComputeInstanceDestroy");
    void *gpu, *gi[7], *ci[7];
    if (init() != 0 || handle(0, &gpu) != 0) return 3;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 7; k++)
            if (gi_create(gpu, profile, &gi[k]) != 0 || ci_create(gi[k], 0, &ci[k]) != 0) return 4;
        for (int k = 0; k < 7; k++)
            if (ci_destroy(ci[k]) != 0 || gi_destroy(gi[k]) != 0) return 5;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    shut();
    printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / rounds / 1000.0);
    return 0;
}
"""
ONE_G_ID = 19           # the 1g profile's ID on the h100 (mig-facts.md)
CHANGES = 28


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=30)
    opts = ap.parse_args()
    compiler = c_compiler()
    nvidia_smi = runtime_peer("NVIDIA_SMI")
    build_native_libraries()
    with tempfile.TemporaryDirectory(prefix="mokka-bench-miglife-") as tmp:
        root = os.path.join(tmp, "node")
        profile = mig_profile(os.path.join(tmp, "h100-mig.yaml"), enabled=True, seven=False)   # GPU 0 starts empty
        agent(root, "--once", "--profile", profile, "--nvidia-smi", nvidia_smi)
        try:
            overlay = os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/"))
            lib = os.path.join(overlay, names.DRIVER_LIB_DIR, names.NVML_LIB_FILE)
            env = workload_env(tmp)
            driver = os.path.join(tmp, "mig-driver")
            with open(driver + ".c", "w") as f:
                f.write(DRIVER)
            subprocess.run([compiler, "-O2", "-o", driver, driver + ".c", "-ldl"], check=True)
            base = statistics.median(time_command([fresh_venv_python(), "-c", "pass"], opts.runs, env=env))
            rounds = [float(subprocess.run([driver, lib, "5", str(ONE_G_ID)], check=True, env=env,
                                           capture_output=True, text=True).stdout)
                      for _ in range(max(3, opts.runs // 3))]
        finally:                      # the agent bind-mounts /run/nvidia/driver: undo it
            agent(root, "--teardown")
    cycle = statistics.median(rounds) / 1000
    print(f"{len(rounds)} runs of 5 rounds, medians")
    print(f"  fresh venv python -c pass                          {base:7.2f} ms")
    print(f"  7 GPU + 7 compute instances created and destroyed  {cycle:7.2f} ms  {cycle / base:4.2f}x")
    print(f"  one change (of {CHANGES} per round)                      {cycle * 1000 / CHANGES:7.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
