"""numba-cuda over the mock CUDA driver, with NVML's view beside it; prints JSON.

    numba_probe.py [MiB]   every device numba lists (name, UUID, compute capability,
                           multiprocessors, PCI ids), then `cuda.to_device(a).copy_to_host()`
                           of MiB mebibytes on device 0 (0: none)
    numba_probe.py kernel  a `@cuda.jit` kernel doubling an array on device 0 (compiled through
                           NVRTC, linked through the driver), launched, synchronized, copied back
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pynvml
from numba import cuda


def kernel() -> dict:
    @cuda.jit
    def double(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= 2

    a = np.arange(4096, dtype=np.float32)
    d = cuda.to_device(a)
    double[16, 256](d)
    out = {"launched": True}
    cuda.synchronize()
    out["synchronized"] = True
    out["unchanged"] = bool(np.array_equal(d.copy_to_host(), a))
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["kernel"]:
        print(json.dumps(kernel()))
        return 0
    mib = int(argv[0]) if argv else 0
    out = {"available": cuda.is_available(), "devices": [], "nvml": []}
    if out["available"]:
        for gpu in cuda.gpus:
            with gpu:
                dev = cuda.get_current_device()
                out["devices"].append({
                    "id": gpu.id, "name": dev.name.decode() if isinstance(dev.name, bytes) else dev.name,
                    "uuid": dev.uuid, "cc": list(dev.compute_capability), "sms": dev.MULTIPROCESSOR_COUNT,
                    "pci": [dev.PCI_DOMAIN_ID, dev.PCI_BUS_ID, dev.PCI_DEVICE_ID]})
        if mib:
            a = np.random.default_rng(7).integers(0, 256, size=mib << 20, dtype=np.uint8)
            out["round_trip"] = bool(np.array_equal(cuda.to_device(a).copy_to_host(), a))
    pynvml.nvmlInit()
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        pci = pynvml.nvmlDeviceGetPciInfo(h)
        out["nvml"].append({"name": pynvml.nvmlDeviceGetName(h), "uuid": pynvml.nvmlDeviceGetUUID(h),
                            "pci": [pci.domain, pci.bus, pci.device]})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
