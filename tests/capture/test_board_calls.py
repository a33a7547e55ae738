"""The library's answers to the calls a captured board's fields reach (native/nvml/api/board.c,
fields.c, clocks.c, perf.c), driven through ctypes as any NVML client drives them: GPU 0
holds every field, GPU 1 none of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.native.staged import clean_env, nvml_build  # noqa: F401 (fixture)

PROFILE = """
version: "1.0"
system: {driver_version: "595.91.07", cuda_version: "13.2"}
device_defaults: {name: GPU, architecture: hopper, accounting: {mode: disabled}, memory: {total_bytes: 1073741824},
                  remapped_rows: {correctable_inactive: 3, uncorrectable_inactive: 4}}
devices:
  - index: 0
    pdi: "0x00000000000000a5"
    addressing_mode: ats
    capabilities: {egm: true}
    cc_protected_memory: {total_bytes: 2097152, used_bytes: 1048576}
    inforom_bbx_flush: {timestamp_us: 1787268780497000, duration_us: 61655}
    refused: {applications_clocks: deprecated, power_state: no_permission, reset_status: deprecated}
    ecc: {repair: {channel_pending: true, tpc_pending: false}, unrepairable_memory: true}
    clocks: {graphics_customer_boost: 2062, graphics_app: 1000}
    thermal: {max_operating_c: 87, memory_max_c: 85, temperature_gpu_c: 27}
    power: {current_draw_mw: 165930, average_draw_mw: 160000, memory_average_draw_mw: 30260,
            module: {average_draw_mw: 467170, instant_draw_mw: 467680, max_limit_mw: 2500000}}
    pcie: {max_link_gen: 5, atomic_caps_inbound: [fetchadd_32, cas_64], atomic_caps_outbound: []}
  - index: 1
    power: {current_draw_mw: 1000, average_draw_mw: "N/A"}
"""

PROBE = r"""
import ctypes as C, json, sys
L = C.CDLL("libnvidia-ml.so.1")
assert L.nvmlInit_v2() == 0
def ver(size, v=1): return size | v << 24
class Two(C.Structure): _fields_ = [("version", C.c_uint), ("value", C.c_uint)]
class Pdi(C.Structure): _fields_ = [("version", C.c_uint), ("value", C.c_ulonglong)]
class Repair(C.Structure): _fields_ = [("version", C.c_uint), ("channel", C.c_uint), ("tpc", C.c_uint)]
class Mem(C.Structure): _fields_ = [("total", C.c_ulonglong), ("free", C.c_ulonglong), ("used", C.c_ulonglong)]
class Field(C.Structure):
    _fields_ = [("fieldId", C.c_uint), ("scopeId", C.c_uint), ("timestamp", C.c_longlong),
                ("latency", C.c_longlong), ("valueType", C.c_int), ("ret", C.c_int), ("value", C.c_ulonglong)]
out = []
for i in range(2):
    h = C.c_void_p(); assert L.nvmlDeviceGetHandleByIndex_v2(i, C.byref(h)) == 0
    r = {}
    p = Pdi(version=ver(C.sizeof(Pdi))); r["pdi"] = [L.nvmlDeviceGetPdi(h, C.byref(p)), p.value]
    r["pdi wrong version"] = L.nvmlDeviceGetPdi(h, C.byref(Pdi(version=ver(C.sizeof(Pdi), 2))))
    r["pdi null"] = L.nvmlDeviceGetPdi(h, None)
    a = Two(version=ver(8)); r["addressing"] = [L.nvmlDeviceGetAddressingMode(h, C.byref(a)), a.value]
    c = Two(version=ver(8)); r["caps"] = [L.nvmlDeviceGetCapabilities(h, C.byref(c)), c.value]
    rp = Repair(version=ver(12)); r["repair"] = [L.nvmlDeviceGetRepairStatus(h, C.byref(rp)), rp.channel, rp.tpc]
    u = C.c_uint(9); r["unrepairable"] = [L.nvmlDeviceGetUnrepairableMemoryFlag_v1(h, C.byref(u)), u.value]
    m = Mem(); r["cc"] = [L.nvmlDeviceGetConfComputeProtectedMemoryUsage(h, C.byref(m)), m.total, m.used, m.free]
    t, d = C.c_ulonglong(), C.c_ulong(); r["bbx"] = [L.nvmlDeviceGetLastBBXFlushTime(h, C.byref(t), C.byref(d)), t.value, d.value]
    n = C.c_uint(8); pids = (C.c_uint * 8)(); r["accounting"] = [L.nvmlDeviceGetAccountingPids(h, C.byref(n), pids), n.value]
    x = C.c_uint(); r["boost"] = [L.nvmlDeviceGetMaxCustomerBoostClock(h, 0, C.byref(x)), x.value]
    r["boost sm"] = L.nvmlDeviceGetMaxCustomerBoostClock(h, 1, C.byref(x))
    r["app clock"] = L.nvmlDeviceGetApplicationsClock(h, 0, C.byref(x))
    r["power state"] = L.nvmlDeviceGetPowerState(h, C.byref(x))
    r["mem max"] = L.nvmlDeviceGetTemperatureThreshold(h, 2, C.byref(x))
    ids = [(185, 0), (186, 0), (185, 1), (186, 1), (188, 1), (185, 2), (195, 0), (196, 0), (226, 0),
           (228, 0), (229, 0), (301, 0), (302, 0)]
    fv = (Field * len(ids))(*[Field(fieldId=f, scopeId=s) for f, s in ids])
    assert L.nvmlDeviceGetFieldValues(h, len(ids), fv) == 0
    r["fields"] = {f"{f.fieldId}/{f.scopeId}": [f.ret, f.value & 0xffffffff if f.valueType in (1, 5) else f.value]
                   for f in fv}
    out.append(r)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def answers(nvml_build, tmp_path_factory) -> list:
    folder = tmp_path_factory.mktemp("board")
    config = folder / "config.yaml"
    config.write_text(PROFILE)
    env = clean_env()
    done = subprocess.run([sys.executable, "-m", "mokka", "compile", "--companion", str(config)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    env.update(LD_LIBRARY_PATH=os.path.dirname(nvml_build), MOCK_NVML_CONFIG=str(config),
               MOCK_NVML_DEV_ROOT=str(folder))
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


OK, NOT_SUPPORTED, INVALID, NO_PERMISSION, VERSION, DEPRECATED = 0, 3, 2, 4, 25, 26


def test_a_gpu_with_the_fields_answers_them(answers):
    a = answers[0]
    assert a["pdi"] == [OK, 0xA5] and a["pdi wrong version"] == VERSION and a["pdi null"] == INVALID
    assert a["addressing"] == [OK, 2] and a["caps"] == [OK, 1]
    assert a["repair"] == [OK, 1, 0] and a["unrepairable"] == [OK, 1]
    assert a["cc"] == [OK, 2097152, 1048576, 1048576]
    assert a["bbx"] == [OK, 1787268780497000, 61655]
    assert a["accounting"] == [OK, 0]
    assert a["boost"] == [OK, 2062] and a["boost sm"] == NOT_SUPPORTED
    assert (a["app clock"], a["power state"]) == (DEPRECATED, NO_PERMISSION)
    assert a["mem max"] == NOT_SUPPORTED                  # Hopper: the T.Limit field instead
    assert a["fields"] == {
        "185/0": [OK, 160000], "186/0": [OK, 165930], "185/1": [OK, 467170], "186/1": [OK, 467680],
        "188/1": [OK, 2500000], "185/2": [OK, 30260], "195/0": [OK, 87 - 85], "196/0": [OK, 0],
        "226/0": [DEPRECATED, 0], "228/0": [OK, 0], "229/0": [OK, 0x21], "301/0": [OK, 3], "302/0": [OK, 4]}


def test_a_gpu_without_them_is_not_supported(answers):
    b = answers[1]
    for key in ("pdi", "addressing", "caps", "repair", "unrepairable", "cc", "bbx", "boost"):
        assert b[key][0] == NOT_SUPPORTED, key
    assert b["accounting"] == [OK, 0]                     # device_defaults gives both GPUs these
    assert (b["fields"]["301/0"], b["fields"]["302/0"]) == ([OK, 3], [OK, 4])
    assert (b["app clock"], b["power state"]) == (NOT_SUPPORTED, NOT_SUPPORTED)
    assert b["fields"]["185/0"] == [NOT_SUPPORTED, 0]     # an average of N/A
    assert b["fields"]["186/0"] == [OK, 1000]
    assert b["fields"]["226/0"] == [OK, 0]                # Reset Required: No
    assert {k: v[0] for k, v in b["fields"].items() if k not in ("185/0", "186/0", "226/0", "301/0", "302/0")} == {
        k: NOT_SUPPORTED for k in ("185/1", "186/1", "188/1", "185/2", "195/0", "196/0", "228/0", "229/0")}
