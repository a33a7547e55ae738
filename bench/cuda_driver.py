"""The mock CUDA driver: what reading the node costs against NVML, and what a copy
costs against memcpy.

Stages nodes of 8 and 64 GPUs with the real agent, then measures in one run, each
sample a fresh process of a small C driver built here (the library already loaded,
timed in-process around the calls):

  properties  cuInit, then every GPU's name, UUID, total memory, PCI bus id and all
              134 attributes, against nvmlInit_v2, then every GPU's handle and name
              (target: <= 2x NVML's, for 8 and for 64 GPUs)
  copy        a 256 MiB host to device copy and back (cuMemcpyHtoD + cuMemcpyDtoH,
              warmed once, best of three interleaved rounds) against memcpy of the same
              bytes twice in the same process, host to a buffer and back (target: >= 0.5x
              memcpy's throughput). That buffer is placed as device memory is, a fresh
              anonymous mapping (page-aligned): malloc's 256 MiB chunks start 16 bytes past
              a page, and a copy between buffers of the same offset runs up to twice as fast
              as one between offsets that differ, whoever calls memcpy

    python bench/cuda_driver.py [-n RUNS]
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

from common import build_native_libraries, c_compiler, require_test_environment  # noqa: E402

require_test_environment()

from mokka.agent import desired as ds  # noqa: E402
from mokka.core import names  # noqa: E402
from mokka.core import profile as prof  # noqa: E402

DRIVER = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
typedef int (*fn)();
static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static fn get(void *lib, const char *name) {
    fn f = (fn)dlsym(lib, name);
    if (!f) { fprintf(stderr, "no %s\n", name); exit(2); }
    return f;
}
int main(int argc, char **argv) {
    void *lib = dlopen(argv[2], RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    char buf[256];
    if (strcmp(argv[1], "cuda") == 0) {
        fn init = get(lib, "cuInit"), count = get(lib, "cuDeviceGetCount"), dget = get(lib, "cuDeviceGet"),
           name = get(lib, "cuDeviceGetName"), uuid = get(lib, "cuDeviceGetUuid_v2"),
           mem = get(lib, "cuDeviceTotalMem_v2"), bus = get(lib, "cuDeviceGetPCIBusId"),
           attr = get(lib, "cuDeviceGetAttribute");
        double a = now();
        int n = 0, v, d;
        size_t total;
        if (init(0) || count(&n)) return 3;
        for (int i = 0; i < n; i++) {
            if (dget(&d, i) || name(buf, 256, d) || uuid(buf, d) || mem(&total, d) || bus(buf, 32, d)) return 4;
            for (int k = 1; k < 135; k++)
                if (attr(&v, k, d)) return 5;
        }
        printf("%.1f\n", now() - a);
    } else if (strcmp(argv[1], "nvml") == 0) {
        fn init = get(lib, "nvmlInit_v2"), count = get(lib, "nvmlDeviceGetCount_v2"),
           handle = get(lib, "nvmlDeviceGetHandleByIndex_v2"), name = get(lib, "nvmlDeviceGetName");
        double a = now();
        unsigned n = 0;
        void *h;
        if (init() || count(&n)) return 3;
        for (unsigned i = 0; i < n; i++)
            if (handle(i, &h) || name(h, buf, 96)) return 4;
        printf("%.1f\n", now() - a);
    } else {                                       /* copy: cuda throughput over memcpy's */
        fn init = get(lib, "cuInit"), dget = get(lib, "cuDeviceGet"), create = get(lib, "cuCtxCreate_v2"),
           alloc = get(lib, "cuMemAlloc_v2"), h2d = get(lib, "cuMemcpyHtoD_v2"), d2h = get(lib, "cuMemcpyDtoH_v2");
        size_t n = 256u << 20;
        int d;
        void *ctx;
        unsigned long long dev;
        char *src = malloc(n), *dst = malloc(n);
        char *mid = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (!src || !dst || mid == MAP_FAILED) return 3;
        memset(src, 1, n); memset(dst, 2, n); memset(mid, 3, n);
        if (init(0) || dget(&d, 0) || create(&ctx, 0, d) || alloc(&dev, n)) return 3;
        if (h2d(dev, src, n) || d2h(dst, dev, n)) return 4;          /* warm: touch the device pages */
        memcpy(mid, src, n); memcpy(dst, mid, n);                     /* and the host's the same way */
        double cuda = 1e30, plain = 1e30;
        for (int round = 0; round < 3; round++) {                     /* interleaved, best of three */
            double a = now();
            if (h2d(dev, src, n) || d2h(dst, dev, n)) return 4;
            double b = now();
            memcpy(mid, src, n);
            memcpy(dst, mid, n);
            double e = now();
            cuda = b - a < cuda ? b - a : cuda;
            plain = e - b < plain ? e - b : plain;
        }
        printf("%.1f %.1f\n", cuda, plain);
    }
    return 0;
}
"""


def agent(root: str, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "mokka", "node-agent", "--host-root", root,
                    "--health-addr", "", "--log-level", "error", *args],
                   check=True, env=dict(os.environ, PYTHONPATH=REPO))


def stage(tmp: str, count: int) -> str:
    _, text = prof.read("h100")
    path = os.path.join(tmp, f"h100x{count}.yaml")
    with open(path, "wb") as f:
        f.write(ds.with_num_devices(text, count))
    root = os.path.join(tmp, f"node{count}")
    agent(root, "--once", "--profile", path)
    return os.path.join(root, names.OVERLAY_HOST_PATH.lstrip("/"))


def sample(driver: str, mode: str, lib: str, env: dict) -> list[float]:
    done = subprocess.run([driver, mode, lib], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench driver {mode} {lib} failed ({done.returncode}): {done.stderr.strip()}")
    return [float(x) for x in done.stdout.split()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=21)
    opts = ap.parse_args()
    compiler = c_compiler()
    build_native_libraries()
    ok = True
    with tempfile.TemporaryDirectory(prefix="mokka-bench-cuda-") as tmp:
        try:
            overlays = {n: stage(tmp, n) for n in (8, 64)}
            dev_root = os.path.join(tmp, "devroot")
            os.makedirs(dev_root)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "LD_", "CUDA_"))}
            env[names.ENV_DEV_ROOT] = dev_root
            driver = os.path.join(tmp, "cuda-driver")
            with open(driver + ".c", "w") as f:
                f.write(DRIVER)
            subprocess.run([compiler, "-O2", "-o", driver, driver + ".c", "-ldl"], check=True)
            print(f"{opts.runs} fresh processes each, alternating, medians")
            for count, overlay in overlays.items():
                lib = os.path.join(overlay, names.DRIVER_LIB_DIR)
                cuda, nvml = [], []
                for _ in range(opts.runs):
                    cuda += sample(driver, "cuda", os.path.join(lib, names.CUDA_LIB_FILE), env)
                    nvml += sample(driver, "nvml", os.path.join(lib, names.NVML_LIB_FILE), env)
                c, v = statistics.median(cuda), statistics.median(nvml)
                ok &= c <= 2 * v
                print(f"  {count:2d} GPUs  cuInit..every property {c:8.1f} us   nvmlInit..names {v:8.1f} us   "
                      f"{c / v:4.2f}x (target <= 2x: {'met' if c <= 2 * v else 'MISSED'})")
            lib = os.path.join(overlays[8], names.DRIVER_LIB_DIR, names.CUDA_LIB_FILE)
            pairs = [sample(driver, "copy", lib, env) for _ in range(opts.runs)]
            cuda = statistics.median(p[0] for p in pairs)
            plain = statistics.median(p[1] for p in pairs)
            ratio = plain / cuda
            ok &= ratio >= 0.5
            print(f"  256 MiB H2D+D2H {cuda / 1e3:7.2f} ms ({2 * 256 / (cuda / 1e6) / 1024:5.2f} GiB/s)   "
                  f"memcpy x2 {plain / 1e3:7.2f} ms   {ratio:4.2f}x memcpy's throughput "
                  f"(target >= 0.5x: {'met' if ratio >= 0.5 else 'MISSED'})")
        finally:                      # the agent bind-mounts /run/nvidia/driver: undo it
            for count in (8, 64):
                if os.path.isdir(os.path.join(tmp, f"node{count}")):
                    agent(os.path.join(tmp, f"node{count}"), "--teardown")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
