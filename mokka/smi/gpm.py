"""dmon's ``--gpm-metrics``: NVML's GPM samples of each GPU, one taken per line, and the
metrics between the last two (nvmlGpmSampleGet, nvmlGpmMetricsGet). A GPU or metric the
library answers NOT_SUPPORTED for prints "-", as NVIDIA's dmon does."""

from __future__ import annotations

import ctypes as C

from mokka.engine import nvml

#: Metrics in MiB/s (PCIe and NVLink traffic); the others are percentages.
_BANDWIDTH = {20, 21, *range(60, 98)}
#: Each metric's column is this wide, as NVIDIA's dmon prints it.
WIDTH = 11


def column(metric: int, supported: bool) -> tuple[str, str]:
    """NVIDIA's heading of a metric's column and its unit: "GPM" alone when the GPU
    answers no GPM."""
    unit = ("GPM:MiB/s" if metric in _BANDWIDTH else "GPM:%") if supported else "GPM"
    return f"id={metric}", unit


class Sampler:
    """Two GPM samples per GPU, the older refilled each line."""

    def __init__(self, metrics: list):
        self.metrics = metrics
        self.samples: dict = {}       # gpu index -> [older, newer, lib] or None (no GPM)

    def columns(self, gpu) -> list:
        """The columns, their units as the first GPU watched answers them."""
        return [column(m, self._supported(gpu)) for m in self.metrics]

    @staticmethod
    def _supported(gpu) -> bool:
        from mokka.engine import nvml_types
        support = nvml_types.GpmSupport(version=nvml_types.GPM_SUPPORT_VERSION)
        return gpu.lib.ask("nvmlGpmQueryDeviceSupport", gpu.handle, C.byref(support)) == nvml.SUCCESS \
            and bool(support.isSupportedDevice)

    def _alloc(self, gpu):
        if not self._supported(gpu):
            return None
        pair = [C.c_void_p(), C.c_void_p()]
        if any(gpu.lib.ask("nvmlGpmSampleAlloc", C.byref(s)) != nvml.SUCCESS for s in pair):
            self._free(gpu.lib, pair)
            return None
        if gpu.lib.ask("nvmlGpmSampleGet", gpu.handle, pair[1]) != nvml.SUCCESS:
            self._free(gpu.lib, pair)
            return None
        return [pair[0], pair[1], gpu.lib]

    def read(self, gpu) -> list:
        """This line's values: the metrics between the previous sample and one taken now."""
        from mokka.engine import nvml_types
        if gpu.index not in self.samples:
            self.samples[gpu.index] = self._alloc(gpu)
        state = self.samples[gpu.index]
        dashes = ["-"] * len(self.metrics)
        if state is None:
            return dashes
        state[0], state[1] = state[1], state[0]
        if gpu.lib.ask("nvmlGpmSampleGet", gpu.handle, state[1]) != nvml.SUCCESS:
            return dashes
        get = nvml_types.GpmMetricsGet(version=nvml_types.GPM_METRICS_GET_VERSION,
                                       numMetrics=len(self.metrics), sample1=state[0], sample2=state[1])
        for i, metric in enumerate(self.metrics):
            get.metrics[i].metricId = metric
        if gpu.lib.ask("nvmlGpmMetricsGet", C.byref(get)) != nvml.SUCCESS:
            return dashes
        return [str(int(round(m.value))) if m.nvmlReturn == nvml.SUCCESS else "-"
                for m in get.metrics[:len(self.metrics)]]

    @staticmethod
    def _free(lib, pair) -> None:
        for s in pair:
            if s.value:
                lib.ask("nvmlGpmSampleFree", s)

    def close(self) -> None:
        for state in self.samples.values():
            if state is not None:
                self._free(state[2], state[:2])
