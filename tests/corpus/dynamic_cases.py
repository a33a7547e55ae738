"""The moving readings' vectors: what native/nvml/engine/dynamic.c gives, bit for bit.

A vector is a ``dynamic_metrics`` block (set as the h100 profile's
``device_defaults.dynamic_metrics``, so every GPU has it), the physical GPU to
read and the pinned second (``MOCK_NVML_CLOCK``), and what that GPU reads:
(temperature °C, power draw mW, utilization.gpu %, utilization.memory %).
The h100 profile gives the static readings (34 °C, 120000 mW, 0 %, 0 %) and
the clamps (shutdown 92 °C, power 200000..700000 mW). Expected values are
literals on purpose; the hand-checkable ones say why in their id.

tests/native/test_dynamic.py checks them through the library.

MEMORY_VECTORS do the same for Mokka's own ``dynamic_metrics.memory`` block: what
GPU reads as memory used, in MiB. The h100 has 81920 MiB, 1024 of them reserved,
so 80896 MiB usable; free is always 80896 minus used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tests.corpus import engine_cases

PROFILE = "h100"
#: The second every staged process of the suite reads (tests/native/staged.py, the tests/smi
#: conftest): every built-in profile's utilization moves, so processes compared with one
#: another, or with literals, must read the same second.
PINNED_CLOCK = 1700000000

#: The chart's baseline (mokka-facts §2): 55 ± 3 °C with a 15 °C ramp over 120 s,
#: 250 ± 25 W, utilization bursting 0-100 % every 30 s.
CHART = {"seed": 42,
         "temperature": {"base_c": 55, "variance_c": 3, "ramp_c": 15, "ramp_period_sec": 120},
         "power": {"base_mw": 250000, "variance_mw": 25000},
         "utilization": {"pattern": "burst", "gpu_min": 0, "gpu_max": 100,
                         "memory_min": 0, "memory_max": 100, "burst_period_sec": 30}}
#: What every built-in profile declares.
BUILTIN = {"utilization": {"pattern": "steady", "gpu_min": 10, "gpu_max": 45,
                           "memory_min": 5, "memory_max": 25}}
#: (utilization.gpu, utilization.memory) of GPU i of every built-in profile (all declare
#: BUILTIN, no seed) at PINNED_CLOCK.
BUILTIN_UTILIZATION = ((17, 8), (37, 6), (40, 12), (38, 12), (39, 24), (40, 18), (17, 24), (26, 16))


@dataclass(frozen=True)
class Vector:
    id: str
    dynamic_metrics: dict
    gpu: int
    clock: int
    #: (temperature_c, power_mw, utilization_gpu, utilization_memory)
    reads: tuple


VECTORS = [
    Vector("chart baseline at t=0: no ramp yet, burst high", CHART, 0, 0, (55, 239117, 100, 100)),
    Vector("chart baseline at t=60: the ramp's peak, +15 C", CHART, 0, 60, (69, 241749, 100, 100)),
    Vector("chart baseline at t=15: ramp +2 C, burst low", CHART, 0, 15, (55, 232959, 0, 0)),
    Vector("another GPU draws other noise", CHART, 3, 60, (69, 252285, 100, 100)),
    Vector("another seed draws other noise", {**CHART, "seed": 7}, 3, 60, (72, 250836, 100, 100)),
    Vector("the last second of 64 bits", CHART, 7, 18446744073709551615, (55, 235119, 0, 0)),
    Vector("clamped to shutdown and the max limit; busy with max below min is min",
           {"temperature": {"base_c": 200, "variance_c": 5}, "power": {"base_mw": 900000, "variance_mw": 1000},
            "utilization": {"pattern": "busy", "gpu_min": 20, "gpu_max": 90,
                            "memory_min": 5, "memory_max": 3}},
           1, 1000, (92, 700000, 90, 5)),
    Vector("clamped to 0 C and the min limit; idle is min",
           {"temperature": {"base_c": 0, "variance_c": 0}, "power": {"base_mw": 0},
            "utilization": {"pattern": "idle", "gpu_min": 12, "gpu_max": 90}},
           2, 1000, (0, 200000, 12, 0)),
    Vector("left-out bases are the static readings: 34 C + noise; 120 W + noise is under the 200 W min",
           {"temperature": {"variance_c": 2}, "power": {"variance_mw": 5000}}, 4, 1234, (36, 200000, 0, 0)),
    Vector("a ramp with no period is no ramp: 55 C flat, the rest static",
           {"temperature": {"base_c": 55, "variance_c": 0, "ramp_c": 15, "ramp_period_sec": 0}},
           2, 77, (55, 120000, 0, 0)),
    Vector("a ramp of 1 C is +1 C at its peak", {"temperature": {"base_c": 50, "ramp_c": 1, "ramp_period_sec": 120}},
           1, 60, (51, 120000, 0, 0)),
    Vector("a period with no ramp is no ramp: 50 C at its peak", {"temperature": {"base_c": 50,
           "ramp_period_sec": 120}}, 1, 60, (50, 120000, 0, 0)),
    Vector("the built-in steady utilization; temperature and power stay static", BUILTIN, 5,
           1700000000, (34, 120000, 40, 18)),
    Vector("the built-in steady utilization, a second later", BUILTIN, 5, 1700000001, (34, 120000, 17, 18)),
    Vector("steady with no bounds is 0-100, seeded", {"seed": 9223372036854775807,
                                                      "utilization": {"pattern": "steady"}},
           6, 99, (34, 120000, 25, 12)),
    Vector("burst with an odd period: high for the first 4 of 7 s", {"utilization": {
        "pattern": "burst", "gpu_min": 10, "gpu_max": 60, "memory_min": 1, "memory_max": 2,
        "burst_period_sec": 7}}, 0, 3, (34, 120000, 60, 2)),
    Vector("burst with an odd period: low from the 5th s", {"utilization": {
        "pattern": "burst", "gpu_min": 10, "gpu_max": 60, "memory_min": 1, "memory_max": 2,
        "burst_period_sec": 7}}, 0, 4, (34, 120000, 10, 1)),
    Vector("burst with a period of 0: the default 30 s, high for its first 15 s", {"utilization": {
        "pattern": "burst", "gpu_min": 10, "gpu_max": 60, "memory_min": 1, "memory_max": 2,
        "burst_period_sec": 0}}, 0, 14, (34, 120000, 60, 2)),
    Vector("burst with a period of 0: low from the 16th s of the default 30", {"utilization": {
        "pattern": "burst", "gpu_min": 10, "gpu_max": 60, "memory_min": 1, "memory_max": 2,
        "burst_period_sec": 0}}, 0, 45, (34, 120000, 10, 1)),
    Vector("burst with a period of 1 s: high at every second", {"utilization": {
        "pattern": "burst", "gpu_min": 10, "gpu_max": 60, "memory_min": 1, "memory_max": 2,
        "burst_period_sec": 1}}, 0, 45, (34, 120000, 60, 2)),
    Vector("burst with no period: the default 30 s, low from its 16th s", {"utilization": {
        "pattern": "burst", "gpu_min": 10, "gpu_max": 60, "memory_min": 1, "memory_max": 2}}, 0, 45,
        (34, 120000, 10, 1)),
    Vector("a block with no value and an empty one move nothing",
           {"temperature": {"base_c": None}, "power": {}}, 2, 77, (34, 120000, 0, 0)),
] + [
    # A 15 C ramp over 120 s is a smooth rise and fall: +0, 2, 7, 12, 15, 12, 7, 2, 0 every 15 s.
    Vector(f"the ramp at t={t}: +{rise} C", {"temperature": {"base_c": 50, "ramp_c": 15, "ramp_period_sec": 120}},
           1, t, (50 + rise, 120000, 0, 0))
    for t, rise in zip(range(0, 121, 15), (0, 2, 7, 12, 15, 12, 7, 2, 0))
]

IDS = [v.id for v in VECTORS]

#: The h100's usable memory (total - reserved), MiB.
USABLE_MIB = 80896
#: The chart baseline with memory moving steadily between 20 and 60 % of the usable memory.
CHART_MEMORY = {**CHART, "memory": {"pattern": "steady", "used_min_pct": 20, "used_max_pct": 60}}


@dataclass(frozen=True)
class MemoryVector:
    id: str
    dynamic_metrics: dict
    gpu: int
    clock: int
    used_mib: int


MEMORY_VECTORS = [
    MemoryVector("busy is the max: 90 % of 80896 MiB, rounded down", {"memory": {
        "pattern": "busy", "used_min_pct": 10, "used_max_pct": 90}}, 0, 1000, 72806),
    MemoryVector("idle is the min: 10 % of 80896 MiB, rounded down", {"memory": {
        "pattern": "idle", "used_min_pct": 10, "used_max_pct": 90}}, 0, 1000, 8089),
    MemoryVector("burst: the max (75 %) in the first 10 of 20 s", {"memory": {
        "pattern": "burst", "used_min_pct": 25, "used_max_pct": 75, "burst_period_sec": 20}}, 1, 9, 60672),
    MemoryVector("burst: the min (25 %) from the 11th s", {"memory": {
        "pattern": "burst", "used_min_pct": 25, "used_max_pct": 75, "burst_period_sec": 20}}, 1, 10, 20224),
    MemoryVector("steady between 20 and 60 % (16179..48537 MiB)", {"memory": {
        "pattern": "steady", "used_min_pct": 20, "used_max_pct": 60}}, 2, 1700000000, 33165),
    MemoryVector("steady, a second later", {"memory": {
        "pattern": "steady", "used_min_pct": 20, "used_max_pct": 60}}, 2, 1700000001, 18646),
    MemoryVector("steady with no bounds is 0-100 %, seeded", {"seed": 5, "memory": {"pattern": "steady"}},
                 6, 99, 15177),
    MemoryVector("max below min is min: busy at 70 %", {"memory": {
        "pattern": "busy", "used_min_pct": 70, "used_max_pct": 30}}, 3, 5, 56627),
    MemoryVector("100 % is every usable MiB: free is 0", {"memory": {"pattern": "busy", "used_max_pct": 100}},
                 4, 5, 80896),
    MemoryVector("0 to 0 % is nothing used", {"memory": {"used_min_pct": 0, "used_max_pct": 0}}, 4, 5, 0),
    MemoryVector("with the chart baseline, GPU 0 at t=60", CHART_MEMORY, 0, 60, 26554),
    MemoryVector("with the chart baseline, GPU 3 at t=60", CHART_MEMORY, 3, 60, 44808),
]

MEMORY_IDS = [v.id for v in MEMORY_VECTORS]


def profile_text(dynamic_metrics: dict) -> bytes:
    """The h100 profile with ``device_defaults.dynamic_metrics`` set to this block."""
    import yaml

    from mokka.core import profile as prof
    from mokka.core import yamlio

    doc = yamlio.safe_load(prof.load(PROFILE).text)
    doc["device_defaults"]["dynamic_metrics"] = dynamic_metrics
    return yaml.safe_dump(doc, sort_keys=False).encode()


def stage(vector, root: str) -> dict:
    """The vector's profile compiled under root; the environment of a process reading it."""
    from mokka.core import names

    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, "dynamic.yaml")
    with open(path, "wb") as f:
        f.write(profile_text(vector.dynamic_metrics))
    case = engine_cases.Case(vector.id, path, ())
    env = engine_cases.stage(case, os.path.join(root, "node"))
    env[names.ENV_NVML_CLOCK] = str(vector.clock)
    return env
