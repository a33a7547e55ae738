"""The NVML calls behind rows of the 580 report that the compiled state holds: the
clocks event reason counters (field values 74, 76, 251-253, and the perf-policy
violation times that share ids 74 and 76), SRAM ECC status and counters, platform
info, and the export table's GPU T.Limit Temp (slot 239).

Through ctypes with NVIDIA's layouts (tests/native/probe_report.py), over built-in
profiles as compiled, and over gb200 with overrides giving the values its profile
leaves at 0 (and a few no NVML struct can carry). Expected values are literals.
"""

from __future__ import annotations

import os

import pytest
import yaml

from mokka.core import names
from mokka.core import profile as prof
from tests.corpus import engine_cases as corpus
from tests.corpus.dynamic_cases import PINNED_CLOCK
from tests.native.conftest import HERE, run_probe
from tests.native.report_values import SRAM

PROBE = os.path.join(HERE, "probe_report.py")
NOT_SUPPORTED, INVALID_ARGUMENT, UNINITIALIZED, VERSION_MISMATCH = ["err", 3], ["err", 2], 1, 25
ULL = 3                                     # NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
#: fields 74, 75, 76, 251, 252, 253 of a GPU whose counters are all 0; 75 (the thermal
#: perf policy) is the software and hardware thermal slowdowns' time together
ZERO_COUNTERS = [[ULL, 0], [ULL, 0], [ULL, 0], [ULL, 0], [ULL, 0], [ULL, 0]]
#: violation status for power, thermal, sync boost, and 7 (no such policy)
ZERO_VIOLATIONS = [0, 0, 0, INVALID_ARGUMENT]
ZERO_SRAM = {"version": 0x01000068, "aggregateUncParity": 0, "aggregateUncSecDed": 0, "aggregateCor": 0,
             "volatileUncParity": 0, "volatileUncSecDed": 0, "volatileCor": 0, "aggregateUncBucketL2": 0,
             "aggregateUncBucketSm": 0, "aggregateUncBucketPcie": 0, "aggregateUncBucketMcu": 0,
             "aggregateUncBucketOther": 0, "bThresholdExceeded": 0}
NO_GUID = "00" * 16
GB200_SERIAL = b"1822725100200\0\0\0".hex()

#: Counts an SRAM can report, every one different (test_report_rows_550.py prints them too).
#: The override document of each physical GPU (overrides/gpu<N>.yaml).
OVERRIDES = {gpu: yaml.safe_dump(doc) for gpu, doc in {
    1: {"clocks_throttle_reasons": {"counters": {
            "sw_power_cap_us": 2354613, "sync_boost_us": 7, "sw_thermal_slowdown_us": 3360324,
            "hw_thermal_slowdown_us": 11, "hw_power_brake_slowdown_us": 13}},
        "ecc": {"sram": SRAM},
        "platform": {"gpu_fabric_guid": 0x0123456789ABCDEF, "peer_type": "direct_connected"}},
    2: {"ecc": {"mode_current": "disabled"}},
    3: {"clocks_throttle_reasons": {"counters": {     # ULLONG_MAX is 18446744073709551615
            "sw_power_cap_us": 18446744073709551, "sync_boost_us": 18446744073709552}}},
    4: {"platform": {"slot_number": 300}},
    5: {"platform": {"chassis_serial_number": "1234567890123456"}},
    6: {"platform": {"peer_type": "nvswitch"}},
    7: {"thermal": {"temperature_gpu_c": 95}}}.items()}


def _without_sram(root: str) -> str:
    """The h100 profile with its ecc.sram block taken out."""
    doc = yaml.safe_load(prof.load("h100").text)
    del doc["device_defaults"]["ecc"]["sram"]
    path = os.path.join(root, "h100-without-sram.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    return path


@pytest.fixture(scope="module")
def probe(nvml_lib, tmp_path_factory):
    """probe(name, command) -> (JSON, stderr) over: a built-in profile, "gb200+overrides"
    (OVERRIDES beside gb200) or "h100 without sram"."""
    seen: dict = {}

    def run(name: str, command: str = "values"):
        if (name, command) not in seen:
            root = str(tmp_path_factory.mktemp("report"))
            profile, overrides = name, None
            if name == "gb200+overrides":
                profile, overrides = "gb200", OVERRIDES
            elif name == "h100 without sram":
                profile = _without_sram(root)
            env = corpus.stage(corpus.Case(name, profile, (), overrides=overrides), root)
            env[names.ENV_NVML_CLOCK] = str(PINNED_CLOCK)
            seen[name, command] = run_probe(nvml_lib, env, command, probe=PROBE)
        return seen[name, command]
    return run


# --- clocks event reason counters ---------------------------------------------------------


@pytest.mark.parametrize("profile", names.BUILTIN_PROFILES)
def test_builtin_profiles_count_no_clocks_events(probe, profile):
    gpus, stderr = probe(profile)
    assert stderr == ""
    assert [g["fields"] for g in gpus] == [ZERO_COUNTERS] * len(gpus)
    assert [g["violations"] for g in gpus] == [ZERO_VIOLATIONS] * len(gpus)


def test_clocks_event_counters_are_the_profiles_microseconds_in_nanoseconds(probe):
    gpu = probe("gb200+overrides")[0][1]
    assert gpu["fields"] == [[ULL, 2354613000], [ULL, 3360335000], [ULL, 7000], [ULL, 3360324000], [ULL, 11000],
                             [ULL, 13000]]


def test_perf_policy_violation_times_are_the_counters_of_the_same_field_ids(probe):
    gpu = probe("gb200+overrides")[0][1]
    assert gpu["violations"] == [2354613000, 3360335000, 7000, INVALID_ARGUMENT]


def test_a_counter_too_large_for_nanoseconds_is_not_supported(probe):
    gpu = probe("gb200+overrides")[0][3]
    assert gpu["fields"][0] == [ULL, 18446744073709551000]        # the largest that fits
    assert gpu["fields"][2] == NOT_SUPPORTED                      # 18446744073709552000 does not
    assert gpu["violations"][:3] == [18446744073709551000, 0, NOT_SUPPORTED]


# --- SRAM ECC -----------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["gb200", "h100", "t4"])
def test_builtin_profiles_report_clean_sram(probe, profile):
    gpus, _ = probe(profile)
    assert [g["sram"] for g in gpus] == [ZERO_SRAM] * len(gpus)
    assert [g["sram_counters"] for g in gpus] == [[[0, 0], [0, 0]]] * len(gpus)


def test_sram_status_reads_every_count_of_the_state(probe):
    gpu = probe("gb200+overrides")[0][1]
    assert gpu["sram"] == {
        "version": 0x01000068, "aggregateUncParity": 20, "aggregateUncSecDed": 30, "aggregateCor": 50,
        "volatileUncParity": 2, "volatileUncSecDed": 3, "volatileCor": 5, "aggregateUncBucketL2": 1,
        "aggregateUncBucketSm": 2, "aggregateUncBucketPcie": 4, "aggregateUncBucketMcu": 3,
        "aggregateUncBucketOther": 5, "bThresholdExceeded": 1}


def test_sram_memory_error_counter_is_correctable_and_parity_plus_secded(probe):
    gpu = probe("gb200+overrides")[0][1]
    assert gpu["sram_counters"] == [[5, 50], [2 + 3, 20 + 30]]     # [corrected, uncorrected] x [volatile, aggregate]


def test_sram_is_not_supported_while_ecc_is_disabled(probe):
    gpus, _ = probe("gb200+overrides")
    assert gpus[2]["sram"] == NOT_SUPPORTED
    assert gpus[2]["sram_counters"] == [[NOT_SUPPORTED] * 2] * 2
    assert gpus[0]["sram"] == ZERO_SRAM                             # its neighbour's ECC is on


def test_sram_is_not_supported_without_an_sram_block(probe):
    gpus, stderr = probe("h100 without sram")
    assert stderr == ""
    assert [g["sram"] for g in gpus] == [NOT_SUPPORTED] * 8
    assert [g["sram_counters"] for g in gpus] == [[[NOT_SUPPORTED] * 2] * 2] * 8
    assert gpus[0]["fields"] == ZERO_COUNTERS                       # the rest of the GPU answers


# --- platform info --------------------------------------------------------------------------


def test_gb200_platform_info_v2_and_v1_hold_the_same_bytes(probe):
    gpus, _ = probe("gb200")
    for index, gpu in enumerate(gpus):
        assert gpu["platform_v2"] == {"version": 0x0200002C, "ibGuid": NO_GUID, "chassisSerialNumber": GB200_SERIAL,
                                      "slotNumber": 21, "trayIndex": 11, "hostId": 1, "peerType": 1,
                                      "moduleId": index + 1}
        assert gpu["platform_v1"] == {"version": 0x0100002C, "ibGuid": NO_GUID, "rackGuid": GB200_SERIAL,
                                      "chassisPhysicalSlotNumber": 21, "computeSlotIndex": 11, "nodeIndex": 1,
                                      "peerType": 1, "moduleId": index + 1}


@pytest.mark.parametrize("profile", ["a100", "h100", "b200", "l40s", "t4"])
def test_platform_info_is_not_supported_without_a_platform_block(probe, profile):
    gpus, _ = probe(profile)
    assert {(str(g["platform_v1"]), str(g["platform_v2"])) for g in gpus} == {(str(NOT_SUPPORTED),) * 2}


def test_platform_info_gives_the_fabric_guid_most_significant_byte_first_and_direct_peers(probe):
    gpu = probe("gb200+overrides")[0][1]
    assert gpu["platform_v2"]["ibGuid"] == "0123456789abcdef" + "00" * 8
    assert gpu["platform_v2"]["peerType"] == 0
    assert gpu["platform_v1"]["ibGuid"] == "0123456789abcdef" + "00" * 8


def test_platform_values_no_byte_can_hold_are_not_supported_with_one_line_each(probe):
    gpus, stderr = probe("gb200+overrides")
    assert [g["platform_v2"] for g in gpus[4:7]] == [NOT_SUPPORTED] * 3
    assert [g["platform_v1"] for g in gpus[4:7]] == [NOT_SUPPORTED] * 3
    assert gpus[7]["platform_v2"]["moduleId"] == 8                  # a positive control
    assert stderr.splitlines() == [
        "mock NVML: GPU 4: platform.slot_number cannot be given by nvmlDeviceGetPlatformInfo: "
        "set it to a whole number from 0 to 255",
        "mock NVML: GPU 5: platform.chassis_serial_number cannot be given by "
        "nvmlDeviceGetPlatformInfo: give at most 15 characters",
        "mock NVML: GPU 6: platform.peer_type cannot be given by nvmlDeviceGetPlatformInfo: "
        "set it to switch_connected or direct_connected",
    ]


# --- GPU T.Limit Temp (export table slot 239) ---------------------------------------------------


@pytest.mark.parametrize("profile,margin", [("h100", 83 - 34), ("gb200", 85 - 36), ("l40s", 89 - 32),
                                            ("a100", NOT_SUPPORTED), ("t4", NOT_SUPPORTED)])
def test_tlimit_is_the_maximum_operating_temperature_less_the_temperature_from_ada_on(probe, profile, margin):
    gpus, _ = probe(profile)
    assert gpus[0]["tlimit"] == margin


def test_tlimit_goes_negative_past_the_maximum_operating_temperature(probe):
    gpus, _ = probe("gb200+overrides")
    assert gpus[7]["tlimit"] == 85 - 95


# --- bad arguments ---------------------------------------------------------------------------------


def test_bad_versions_and_pointers(probe):
    got, _ = probe("gb200", "misuse")
    assert got == {"sram v0": VERSION_MISMATCH, "sram v2": VERSION_MISMATCH, "sram short": VERSION_MISMATCH,
                   "sram null": 2, "sram bad handle": 2, "platform v0": VERSION_MISMATCH,
                   "platform v3": VERSION_MISMATCH, "platform long": VERSION_MISMATCH, "platform null": 2,
                   "violation null": 2, "tlimit null": 2, "sram after shutdown": UNINITIALIZED,
                   "platform after shutdown": UNINITIALIZED}
