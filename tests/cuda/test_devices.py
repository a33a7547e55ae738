"""What the mock CUDA driver says a device is: NVML's GPUs (names, UUIDs, PCI ids,
memory), and the board values of the facts table, for every built-in profile."""

from __future__ import annotations

import pytest

from mokka.core import names
from tests.cuda.conftest import node, run_cuda
from tests.cuda.facts import ATTR, BOARDS, COMMON, CUDART_ATTRIBUTES, H100_COPY_ENGINES, \
    H100_SHARED_MEMORY_PER_SM, MAX_THREADS_PER_SM

#: The CUDA version each profile's driver reports, as cuDriverGetVersion gives it.
DRIVER_VERSION = {"a100": 12040, "h100": 12040, "b200": 12060, "gb200": 13000, "gb300": 12080,
                  "l40s": 12040, "t4": 12040}


@pytest.fixture(scope="module", params=names.BUILTIN_PROFILES)
def seen(request, cuda_lib, tmp_path_factory):
    profile = request.param
    return profile, run_cuda(cuda_lib, node(profile, tmp_path_factory.mktemp(profile)), "devices")


def pci_of(text: str) -> list[int]:
    domain, bus, rest = text.split(":")
    return [int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)]


def test_every_gpu_nvml_sees_is_a_cuda_device_with_nvmls_identity(seen):
    profile, s = seen
    assert s["init"] == 0 and s["version"] == DRIVER_VERSION[profile]
    nvml = s["nvml"]
    assert s["count"] == len(nvml) > 0
    for dev, gpu in zip(s["devices"], nvml):
        assert dev["name"] == gpu["name"]
        assert "GPU-" + "-".join([dev["uuid"][:8], dev["uuid"][8:12], dev["uuid"][12:16], dev["uuid"][16:20],
                                  dev["uuid"][20:]]) == gpu["uuid"]
        assert dev["uuid_v2"] == dev["uuid"]
        assert pci_of(dev["pci"]) == gpu["pci"]
        assert [dev["attrs"][str(ATTR[k])] for k in ("pci_domain_id", "pci_bus_id", "pci_device_id")] == gpu["pci"]
        assert dev["total"] == gpu["total"] - gpu["reserved"]
    assert s["by_pci"] == list(range(s["count"]))
    assert s["bad_ordinal"] == 101                              # CUDA_ERROR_INVALID_DEVICE


def test_board_values_are_the_facts_table(seen):
    profile, s = seen
    cc, sms, sm_clock, mem_clock, bus, l2 = BOARDS[profile]
    for dev in s["devices"]:
        a = {k: dev["attrs"][str(n)] for k, n in ATTR.items()}
        assert (a["cc_major"], a["cc_minor"]) == cc
        for key, want in (("multiprocessor_count", sms), ("global_memory_bus_width", bus),
                          ("l2_cache_size", l2)):
            if want is not None:
                assert a[key] == want, key
        if sm_clock is not None:
            assert (a["clock_rate"], a["memory_clock_rate"]) == (sm_clock * 1000, mem_clock * 1000)   # kHz
        if profile in MAX_THREADS_PER_SM:
            assert a["max_threads_per_multiprocessor"] == MAX_THREADS_PER_SM[profile]
        if profile == "h100":
            assert a["max_shared_memory_per_multiprocessor"] == H100_SHARED_MEMORY_PER_SM
            assert a["async_engine_count"] == H100_COPY_ENGINES
        assert {k: a[k] for k in COMMON} == COMMON
        assert a["unified_addressing"] == 1 and a["multiprocessor_count"] > 0


def test_every_attribute_cudart_reads_has_an_answer(seen):
    _, s = seen
    for dev in s["devices"]:
        assert all(str(n) in dev["attrs"] for n in CUDART_ATTRIBUTES)
