"""Every query the compiled state answers, field by field, for every built-in profile.

The expected values come from the compiled state (what nvidia-smi's Python
engine prints) through the NVML encodings written out here as literals
(brand and architecture codes, struct layouts, bit masks); a few pinned
literals per profile guard against a state and a library that agree on
something wrong.
"""

from __future__ import annotations

import pytest

from mokka.core import compile as comp
from mokka.engine import flatstate
from mokka.core import names
from mokka.core import profile as prof
from tests.corpus.dynamic_cases import BUILTIN_UTILIZATION, PINNED_CLOCK
from tests.native.conftest import run_probe

NOT_SUPPORTED = ["err", 3]
BRANDS = {"nvidia": 14, "tesla": 2, "quadro": 1, "geforce": 5}
ARCHS = {"turing": 6, "ampere": 7, "ada_lovelace": 8, "hopper": 9, "blackwell": 10}
PRE_ADA = ("turing", "ampere")
ON = {"enabled": 1, "disabled": 0, True: 1, False: 0}
REASON_BITS = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
               "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clocks_setting")

#: (profile, visible index, query, value) that must hold whatever the state says.
PINNED = [
    ("h100", 0, "MemoryInfo_v2", [85899345920, 1073741824, 84825604096, 0]),
    ("h100", 0, "MemoryInfo", [85899345920, 84825604096, 1073741824]),
    ("h100", 0, "PciInfo", ["00000000:1A:00.0", "0000:1A:00.0", 0, 0x1A, 0, 0x233010DE, 0x165810DE]),
    ("h100", 0, "Fabric", ["completed", 0, "00000000-0000-0000-0000-000000000001", 0, 0x1AA]),
    ("h100", 0, "NvLinkCount", 18),
    ("h100", 3, "NvLinks", None),
    ("a100", 0, "Fabric", NOT_SUPPORTED),
    ("a100", 0, "Architecture", 7),
    ("t4", 0, "FanSpeed", NOT_SUPPORTED),
    ("t4", 0, "RemappedRows", NOT_SUPPORTED),
    ("l40s", 0, "NvLinkCount", 0),
    ("gb200", 0, "Architecture", 10),
    ("gb300", 0, "Brand", 14),
]

#: The profile's NVLink generation -> the nvmlNvlinkVersion_t NVML answers (1.0, 2.0, 3.1, 4.0, 5.0;
#: an A100 answers 5, open-mpi/hwloc#658).
NVLINK_VERSION = {1: 1, 2: 2, 3: 5, 4: 6, 5: 7}


def _bus(text: str) -> str:
    domain, bus, rest = text.split(":")
    device, function = rest.split(".")
    return "%08X:%02X:%02X.%X" % (int(domain, 16), int(bus, 16), int(device, 16), int(function, 16))


def _mask(cpus: str, words: int = 4) -> list:
    out = [0] * words
    for part in cpus.split(","):
        lo, _, hi = part.partition("-")
        for cpu in range(int(lo), int(hi or lo) + 1):
            if cpu < 64 * words:
                out[cpu // 64] |= 1 << (cpu % 64)
    return out


def _or_na(value):
    return NOT_SUPPORTED if value in (None, "N/A") else value


def expected_gpu(g: dict, index: int, system: dict, nvlink: dict) -> dict:
    pci, pcie, power, thermal = g["pci"], g["pcie"], g["power"], g["thermal"]
    clocks, mem, ecc, mig = g["clocks"], g["memory"], g["ecc"], g["mig"]
    pre_ada = g["architecture"] in PRE_ADA
    used = mem["used_bytes"]
    free = mem["total_bytes"] - mem["reserved_bytes"] - used
    pstate = int(g["performance_state"][1:])
    ecc_on = ON[ecc["mode_current"]]
    mig_ok = "table" in mig                             # a board with a MIG table
    if not mig_ok and mig.get("max_gpu_instances"):     # MIG-capable, its table not public: disabled
        mig_ok, mig = True, {**mig, "mode_current": "disabled", "mode_pending": "disabled"}
    reasons = sum(1 << i for i, k in enumerate(REASON_BITS) if g["clocks_throttle_reasons"][k])
    domains = ("graphics", "sm", "memory", "video")
    mems = [m["freq_mhz"] for m in g["supported_clocks"]["memory_clocks"]]
    links = g["nvlink_links"]
    fabric = g.get("fabric")
    d = {
        "Name": g["name"], "UUID": g["uuid"], "Serial": str(g["serial"]), "Index": index,
        "MinorNumber": g["minor_number"], "Brand": BRANDS[g["brand"]], "Architecture": ARCHS[g["architecture"]],
        "CudaComputeCapability": [g["compute_capability"]["major"], g["compute_capability"]["minor"]],
        "BoardId": g["board_id"], "BoardPartNumber": g["board_part_number"], "VbiosVersion": g["vbios_version"],
        "InforomImageVersion": g["inforom"]["image_version"],
        "InforomVersion0": _or_na(g["inforom"]["oem_object"]), "InforomVersion1": _or_na(g["inforom"]["ecc_object"]),
        "InforomVersion2": _or_na(g["inforom"]["pwr_object"]),
        "PciInfo": [pci["bus_id"], "%04X:%02X:%02X.%X" % (pci["domain"], pci["bus"], pci["device"], pci["function"]),
                    pci["domain"], pci["bus"], pci["device"], pci["device_id"], pci["subsystem_id"]],
        "PciInfoExt": [pci["bus_id"], pci["domain"], pci["bus"], pci["device"], pci["device_id"],
                       pci["subsystem_id"], 3, 2],
        "MaxPcieLinkGeneration": pcie["max_link_gen"], "GpuMaxPcieLinkGeneration": pcie["max_link_gen"],
        "MaxPcieLinkWidth": pcie["max_link_width"],
        "CurrPcieLinkGeneration": pcie["current_link_gen"], "CurrPcieLinkWidth": pcie["current_link_width"],
        "PcieReplayCounter": pcie["replay_counter"],
        "PowerUsage": power["current_draw_mw"], "PowerManagementLimit": power["enforced_limit_mw"],
        "EnforcedPowerLimit": power["enforced_limit_mw"], "PowerManagementDefaultLimit": power["default_limit_mw"],
        "PowerManagementLimitConstraints": [power["min_limit_mw"], power["max_limit_mw"]],
        "TotalEnergyConsumption": power["total_energy_consumption_mj"],
        "PerformanceState": pstate, "PowerState": pstate, "ComputeMode": 0,
        "PersistenceMode": ON[g["persistence_mode"]], "EccMode": [ecc_on, ON[ecc["mode_pending"]]],
        "DefaultEccMode": [ON[ecc["default_mode"]]],     # pynvml returns a list "DisplayMode": ON[g["display"]["mode"]],
        "DisplayActive": ON[g["display"]["active"]],
        "MigMode": [ON[mig["mode_current"]], ON[mig["mode_pending"]]] if mig_ok else NOT_SUPPORTED,
        # nvml.h: zero while MIG is disabled
        "MaxMigDeviceCount": (mig["max_gpu_instances"] if ON[mig["mode_current"]] else 0) if mig_ok
        else NOT_SUPPORTED,
        "NumaNodeId": g["numa_node"], "NumFans": g["fan"]["count"],
        "FanSpeed": NOT_SUPPORTED if not g["fan"]["count"] else g["fan"]["speed_percent"],
        "EncoderUtilization": [g["utilization"]["encoder"], 1000000],
        "DecoderUtilization": [g["utilization"]["decoder"], 1000000],
        "EncoderStats": [g["encoder_stats"][k] for k in ("session_count", "average_fps", "average_latency_us")],
        "NumGpuCores": g["num_gpu_cores"], "MemoryBusWidth": mem["memory_bus_width"],
        "AccountingMode": ON[g["accounting"]["mode"]], "AccountingBufferSize": g["accounting"]["buffer_size"],
        "GpuOperationMode": [0, 0], "VirtualizationMode": 0,
        "CurrentClocksEventReasons": reasons, "SupportedClocksEventReasons": 0x1FF,
        "SupportedMemoryClocks": mems,
        "SupportedGraphicsClocks": [m["graphics_clocks"] for m in g["supported_clocks"]["memory_clocks"]],
        "GspFirmwareVersion": g["gsp_firmware"]["version"], "GspFirmwareMode": [1, 1], "MultiGpuBoard": 0,
        "RemappedRows": NOT_SUPPORTED if g["architecture"] == "turing" else [
            g["remapped_rows"]["correctable"], g["remapped_rows"]["uncorrectable"],
            ON[g["remapped_rows"]["pending"]], ON[g["remapped_rows"]["failure_occurred"]]],
        "ModuleId": g.get("platform", {}).get("module_id", NOT_SUPPORTED), "IsMigDeviceHandle": 0,
        "MemoryInfo": [mem["total_bytes"], free, mem["total_bytes"] - free],
        "MemoryInfo_v2": [mem["total_bytes"], mem["reserved_bytes"], free, used],
        "BAR1MemoryInfo": [g["bar1_memory"]["total_bytes"],
                           g["bar1_memory"]["total_bytes"] - g["bar1_memory"]["used_bytes"],
                           g["bar1_memory"]["used_bytes"]],
        # every built-in profile's utilization moves: the pinned second's (dynamic_cases.py)
        "UtilizationRates": list(BUILTIN_UTILIZATION[index]),
        "Temperature": thermal["temperature_gpu_c"],
        "TemperatureThreshold": [thermal["shutdown_threshold_c"], thermal["slowdown_threshold_c"],
                                 thermal.get("memory_max_c", NOT_SUPPORTED) if pre_ada else NOT_SUPPORTED,
                                 thermal["max_operating_c"]],
        "ClockInfo": [clocks[f"{d}_current"] for d in domains],
        "MaxClockInfo": [clocks[f"{d}_max"] for d in domains],
        "ApplicationsClock": [clocks.get(f"{d}_app", NOT_SUPPORTED) for d in domains],
        "DefaultApplicationsClock": [clocks.get(f"{d}_app_default", NOT_SUPPORTED) for d in domains],
        "Clock": [[clocks[f"{d}_current"], clocks.get(f"{d}_app", NOT_SUPPORTED),
                   clocks.get(f"{d}_app_default", NOT_SUPPORTED), clocks.get(f"{d}_customer_boost", NOT_SUPPORTED)]
                  for d in domains],
        "TotalEccErrors": [[ecc["errors"][s][k]["total"] if ecc_on else NOT_SUPPORTED
                            for s in ("volatile", "aggregate")] for k in ("single_bit", "double_bit")],
        "ComputeRunningProcesses": [], "GraphicsRunningProcesses": [],
        "Fabric": NOT_SUPPORTED if not fabric else [
            "completed" if fabric["state"] == names.FABRIC_STATE_AUTO else fabric["state"],
            fabric["clique_id"], fabric["cluster_uuid"], 0, 0x1AA],
        "NvLinkCount": len(links),
        "NvLinks": [[1 if l["state"] == "active" else 0, NVLINK_VERSION[nvlink["version"]], 2 if l["remote_device_type"] == "switch" else 0,
                     _bus(l["remote_pci_bus_id"]), nvlink["bandwidth_per_link_mbps"] if l["state"] == "active" else 0,
                     1 if l["state"] == "active" else 0] for l in links],
        "Fields": {"82": thermal["temperature_memory_c"], "95": 0, "185": power["current_draw_mw"],
                   "186": power["current_draw_mw"], "187": power["min_limit_mw"], "188": power["max_limit_mw"],
                   "189": power["default_limit_mw"], "190": power["enforced_limit_mw"],
                   "192": power["enforced_limit_mw"], "195": NOT_SUPPORTED, "226": 0, "227": 0},
        "CpuAffinity": _mask(g["cpu_affinity"]),
    }
    return d


def _level(a: dict, b: dict) -> int:
    if a is b:
        return 0
    if a["root_complex"] == b["root_complex"]:
        return 30
    return 40 if a["numa_node"] == b["numa_node"] else 50


@pytest.fixture(scope="module")
def dumps(nvml_lib, tmp_path_factory):
    out = {}
    for name in names.BUILTIN_PROFILES:
        root = tmp_path_factory.mktemp(f"fields-{name}")
        loaded = prof.load(name)
        state = comp.compile_profile(loaded)
        config = root / names.PROFILE_FILE
        config.write_bytes(loaded.text)
        (root / "config.nvml").write_bytes(flatstate.state_companion(state))
        seen, stderr = run_probe(nvml_lib, {names.ENV_NVML_CONFIG: str(config),
                                            names.ENV_DEV_ROOT: str(root),
                                            names.ENV_NVML_CLOCK: str(PINNED_CLOCK)}, "dump")
        assert stderr == ""
        out[name] = (state, seen)
    return out


@pytest.mark.parametrize("profile", names.BUILTIN_PROFILES)
def test_every_query_matches_the_compiled_state(dumps, profile):
    state, seen = dumps[profile]
    system = state["system"]
    assert seen["DriverVersion"] == system["driver_version"]
    assert seen["NVMLVersion"] == system["nvml_version"]
    cuda = system["cuda_version_major"] * 1000 + system["cuda_version_minor"] * 10
    assert seen["CudaDriverVersion"] == seen["CudaDriverVersion_v2"] == cuda
    gpus = state["gpus"]
    assert len(seen["gpus"]) == len(gpus)
    for index, (g, got) in enumerate(zip(gpus, seen["gpus"])):
        want = expected_gpu(g, index, system, state["nvlink"] or {})
        for key, value in want.items():
            assert got[key] == value, f"GPU {index} {key}"
    assert seen["CommonAncestor"] == [[_level(a, b) for b in gpus] for a in gpus]


@pytest.mark.parametrize("profile,index,query,value", PINNED,
                         ids=[f"{p} GPU {i} {q}" for p, i, q, _ in PINNED])
def test_pinned_literals(dumps, profile, index, query, value):
    got = dumps[profile][1]["gpus"][index][query]
    if value is None:                       # h100 links: 18 active switch links, 4 switches round robin
        assert [l[3] for l in got[:5]] == ["00000000:05:00.0", "00000000:06:00.0", "00000000:07:00.0",
                                           "00000000:08:00.0", "00000000:05:00.0"]
        assert {tuple(l[:3]) + tuple(l[4:]) for l in got} == {(1, 6, 2, 26562, 1)}     # NVLink 4.0 is nvmlNvlinkVersion_t 6
    else:
        assert got == value


def test_cuda_version_literals(dumps):
    assert dumps["h100"][1]["CudaDriverVersion_v2"] == 12040
    assert dumps["gb200"][1]["CudaDriverVersion_v2"] == 13000
    assert dumps["b200"][1]["DriverVersion"] == "560.35.03"
