"""The NVML calls DCGM 4.6 makes that are newer than the nvml.h the library is built from
(native/nvml/api/nvml_newer.h), through ctypes with NVIDIA's layouts (newer_probe.py) on
staged h100 (MIG on), a100 and gb200 nodes, the clock pinned so the moving temperature is
one value:

- the thermal margin is the distance to the nearest slowdown: T.Limit from Hopper on (what
  nvidia-smi shows as "GPU T.Limit Temp"), the slowdown threshold on an A100, less the
  temperature nvmlDeviceGetTemperature reads at the same second; a MIG device has none;
- the unrepairable-memory flag by the name DCGM resolves answers as the _v1 call: "no" on
  Hopper and later, NOT_SUPPORTED on an A100 (nvml.h 13: Hopper and newer);
- workload power profiles and PRM register access are Blackwell's: NOT_SUPPORTED on h100 and
  a100 once the argument is good, NVML's argument errors before that;
- a system event set is created, registered for driver bind and unbind, waited on (no GPU
  is ever bound or unbound on a Mokka node: TIMEOUT, at once for a timeout of 0) and freed;
  a freed set ends a wait on it and is refused afterwards.
"""

from __future__ import annotations

import pytest

from mokka.core import names
from tests.native.conftest import run_probe
from tests.native.mig_nodes import board
from tests.native.staged import nvml_build, staged_node  # noqa: F401 (fixtures)

PROBE = __file__.replace("test_nvml_newer.py", "newer_probe.py")
SUCCESS, INVALID_ARGUMENT, NOT_SUPPORTED, TIMEOUT, VERSION_MISMATCH, UNINITIALIZED = 0, 2, 3, 10, 25, 1
#: The second every process of these tests reads (tests/corpus/dynamic_cases.PINNED_CLOCK).
PINNED_SECOND = 1700000000


def staged(root, profile: str) -> dict:
    env = (board(str(root), "h100", mig="enabled", layout=["1g.10gb"] * 7) if profile == "h100"
           else board(str(root), profile))
    return {**env, names.ENV_NVML_CLOCK: str(PINNED_SECOND)}


def probe(nvml_lib, env: dict, *args: str):
    return run_probe(nvml_lib, env, *args, probe=PROBE)[0]


@pytest.fixture(scope="module", params=["h100", "a100"])
def node(request, nvml_lib, tmp_path_factory):
    return request.param, staged(tmp_path_factory.mktemp(request.param), request.param)


#: [rc, margin, temperature] at the pinned second. The h100's nearest slowdown is T.Limit, its
#: maximum operating temperature (83 C); the a100 has no T.Limit: its slowdown threshold (87 C).
MARGIN = {"h100": [SUCCESS, 83 - 34, 34], "a100": [SUCCESS, 87 - 33, 33]}


def test_the_margin_is_the_nearest_slowdown_less_the_temperature(node, nvml_lib):
    profile, env = node
    assert probe(nvml_lib, env, "margin", "0") == MARGIN[profile]


def test_the_margin_is_the_t_limit_temperature_nvidia_smi_shows(staged_node):
    """NVIDIA's nvidia-smi 550 over the library prints the same margin as "GPU T.Limit Temp"."""
    node = staged_node("h100")
    env = node.env(**{names.ENV_NVML_CONFIG: node.config})
    assert probe(node.overlay.lib, env, "margin", "0") == [SUCCESS, 49, 34]
    done = node.run(["-q", "-d", "TEMPERATURE", "-i", "0"])
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[1].strip() for line in done.stdout.splitlines()
            if line.strip().startswith("GPU T.Limit Temp ")] == ["49 C"]


def test_the_margin_takes_version_1_only(node, nvml_lib):
    _, env = node
    assert probe(nvml_lib, env, "margin", "0", str(8 | 2 << 24))[0] == VERSION_MISMATCH
    assert probe(nvml_lib, env, "margin", "0", "0")[0] == VERSION_MISMATCH


def test_a_mig_device_has_no_margin_of_its_own(nvml_lib, tmp_path):
    assert probe(nvml_lib, staged(tmp_path, "h100"), "margin-mig", "0") == NOT_SUPPORTED


#: [rc, flag] by nvmlDeviceGetUnrepairableMemoryFlag, then by its _v1 name (flag 9: untouched).
UNREPAIRABLE = {"h100": [SUCCESS, 0, SUCCESS, 0], "a100": [NOT_SUPPORTED, 9, NOT_SUPPORTED, 9]}


def test_the_unrepairable_memory_flag_by_dcgms_name(node, nvml_lib):
    profile, env = node
    assert probe(nvml_lib, env, "unrepairable", "0") == UNREPAIRABLE[profile]


def test_blackwells_power_profiles_and_prm_access_are_not_on_these_boards(node, nvml_lib):
    _, env = node
    versioned = [NOT_SUPPORTED, INVALID_ARGUMENT, VERSION_MISMATCH]
    unversioned = [NOT_SUPPORTED, INVALID_ARGUMENT, None]
    assert probe(nvml_lib, env, "blackwell", "0") == {
        "nvmlDeviceWorkloadPowerProfileGetProfilesInfo": versioned,
        "nvmlDeviceWorkloadPowerProfileGetCurrentProfiles": versioned,
        "nvmlDeviceWorkloadPowerProfileSetRequestedProfiles": versioned,
        "nvmlDeviceWorkloadPowerProfileClearRequestedProfiles": versioned,
        "nvmlDeviceWorkloadPowerProfileUpdateProfiles_v1": unversioned,
        "nvmlDeviceReadWritePRM_v1": unversioned,
        "nvmlDeviceReadPRMCounters_v1": unversioned,
    }


def test_a_system_event_set_lives_waits_and_is_freed(node, nvml_lib):
    _, env = node
    assert probe(nvml_lib, env, "system-events") == {
        "create_before_init": UNINITIALIZED,
        "create": [SUCCESS, True],
        "register": SUCCESS,
        "register_unknown_type": INVALID_ARGUMENT,
        "wait_0ms": [TIMEOUT, 0],                       # nothing happened: no event counted
        "wait_50ms": [TIMEOUT, 0],
        "free": SUCCESS,
        "wait_ended_by_free": [TIMEOUT, 0],             # a ten-minute wait, over when the set went
        "free_again": INVALID_ARGUMENT,
        "wait_freed": [INVALID_ARGUMENT, 7],            # refused before anything is written
        "register_freed": INVALID_ARGUMENT,
        "create_null": INVALID_ARGUMENT,
        "create_wrong_version": VERSION_MISMATCH,
        "wait_wrong_version": VERSION_MISMATCH,
        "wait_no_buffer": INVALID_ARGUMENT,
        "free_other": SUCCESS,
    }


def test_blackwell_reports_no_unrepairable_memory_either(nvml_lib, tmp_path):
    assert probe(nvml_lib, staged(tmp_path, "gb200"), "unrepairable", "0") == [SUCCESS, 0, SUCCESS, 0]
