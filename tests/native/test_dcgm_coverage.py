"""Every NVML function DCGM 4.6 calls (dcgm_nvml_calls.txt, vGPU-only ones out of scope), called
through ctypes on an h100 with MIG on (seven 1g.10gb instances) and an a100 with MIG off, with
arguments made from nvml.h's prototypes (probe_dcgm.py). A function that answers NOT_SUPPORTED,
or that the library lacks, fails the test unless the tables below say why:

    REAL_BOARD  the real board answers NOT_SUPPORTED too (a pass: the mock is faithful)
    NOT_YET     the mock does not implement it yet (an xfail: a known gap, not a pass; strict,
                so an entry that starts answering must leave the table)

and a call in REAL_BOARD that the mock answers fails too (the mock would answer where the
real board refuses). Where a real board's nvidia-smi -q -x capture shows the call's field
as N/A, the reason says so.

The coverage figure printed per board (-s shows it) counts a function answered when its return
code is anything but NOT_SUPPORTED or missing, and how many answers are checked for a value.
Every answer is checked (dcgm_values.py): a SUCCESS for its value against the boards' profiles
(VALUES; a setter by its getter's read-back) or, where it carries nothing else, for its code
(RC_ONLY); any other code for being what the real driver answers to the probe's arguments (CODES).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.native import dcgm_values as dv
from tests.native import mig_nodes as mn
from tests.native.conftest import HERE, clean_env
from tests.nativelibs import build_module

LIST = os.path.join(HERE, "dcgm_nvml_calls.txt")
PROBE = os.path.join(HERE, "probe_dcgm.py")
BOARDS = dv.BOARDS
SUCCESS, NOT_SUPPORTED = 0, 3
VALUES, CODES, RC_ONLY, WRONG = dv.registries()
VGPU_ONLY = re.compile(r"Vgpu|Grid|Pgpu|Virtualization")
BOTH = BOARDS

_captured = " (real A100 and GB200 nvidia-smi -q -x: N/A; NVIDIA/k8s-test-infra's hardware captures)"
_fanless = "an SXM board has no fan of its own" + _captured
_remaps = "Ampere and later retire no pages, they remap rows" + _captured
_fabric = "fabric (NVSwitch/IMEX) state is reported from Hopper on (real A100 nvidia-smi -q -x: N/A)"
_mig_util = "a GPU in MIG mode reports no GPU-wide utilization; NVML answers NOT_SUPPORTED"
_mig_off = "MIG is off on this a100: NVML answers NOT_SUPPORTED for GPU and compute instances"
_not_mig = "a GPU that is no MIG device has no MIG attributes or instance ids: NOT_SUPPORTED"
_hopper_on = "nvml.h 13: the unrepairable memory flag is for Hopper and newer"
_blackwell_on = "nvml.h 13: workload power profiles and PRM register access are for Blackwell and newer"

#: (function, boards) -> why the real board answers NOT_SUPPORTED too.
REAL_BOARD = {
    ("nvmlDeviceGetDriverModel", BOTH): "the driver model (WDDM/TCC) exists on Windows only" + _captured,
    ("nvmlDeviceSetDriverModel", BOTH): "the driver model (WDDM/TCC) exists on Windows only",
    ("nvmlDeviceGetFanSpeed", BOTH): _fanless,
    ("nvmlDeviceGetFanSpeed_v2", BOTH): _fanless,
    ("nvmlDeviceGetTargetFanSpeed", BOTH): _fanless,
    ("nvmlDeviceGetMinMaxFanSpeed", BOTH): _fanless,
    ("nvmlDeviceSetFanSpeed_v2", BOTH): _fanless,
    ("nvmlDeviceSetDefaultFanSpeed_v2", BOTH): _fanless,
    ("nvmlDeviceGetBridgeChipInfo", BOTH): "a single-GPU board has no bridge chip to report" + _captured,
    ("nvmlDeviceGetEncoderCapacity", BOTH): "A100 and H100 have no NVENC video encoder",
    ("nvmlDeviceGetAutoBoostedClocksEnabled", BOTH): "auto boost is not offered on data-center boards" + _captured,
    ("nvmlDeviceSetAutoBoostedClocksEnabled", BOTH): "auto boost cannot be set on data-center boards since Volta",
    ("nvmlDeviceSetDefaultAutoBoostedClocksEnabled", BOTH): "auto boost cannot be set on data-center "
                                                            "boards since Volta",
    ("nvmlDeviceSetGpuOperationMode", BOTH): "GPU operation modes (GOM) are not offered" + _captured,
    ("nvmlDeviceGetNvLinkUtilizationControl", BOTH): "NVLink utilization counters are deprecated; the "
                                                    "driver answers NOT_SUPPORTED since Ampere (field values instead)",
    ("nvmlDeviceSetNvLinkUtilizationControl", BOTH): "NVLink utilization counters are deprecated since Ampere",
    ("nvmlDeviceGetNvLinkUtilizationCounter", BOTH): "NVLink utilization counters are deprecated since Ampere",
    ("nvmlDeviceFreezeNvLinkUtilizationCounter", BOTH): "NVLink utilization counters are deprecated since Ampere",
    ("nvmlDeviceResetNvLinkUtilizationCounter", BOTH): "NVLink utilization counters are deprecated since Ampere",
    ("nvmlDeviceGetUtilizationRates", ("h100",)): _mig_util,
    ("nvmlDeviceGetEncoderUtilization", ("h100",)): _mig_util,
    ("nvmlDeviceGetDecoderUtilization", ("h100",)): _mig_util,
    ("nvmlDeviceGetProcessUtilization", ("h100",)): _mig_util,
    ("nvmlDeviceGetDynamicPstatesInfo", ("h100",)): _mig_util,
    ("nvmlDeviceGetRetiredPages", BOTH): _remaps,
    ("nvmlDeviceGetRetiredPages_v2", BOTH): _remaps,
    ("nvmlDeviceGetRetiredPagesPendingStatus", BOTH): _remaps,
    ("nvmlDeviceGetGpuFabricInfo", ("a100",)): _fabric,
    ("nvmlDeviceGetGpuFabricInfoV", ("a100",)): _fabric,
    ("nvmlDeviceGetAttributes", ("a100",)): _not_mig,
    ("nvmlDeviceGetAttributes_v2", ("a100",)): _not_mig,
    ("nvmlDeviceGetGpuInstanceId", ("a100",)): _not_mig,
    ("nvmlDeviceGetComputeInstanceId", ("a100",)): _not_mig,
    ("nvmlDeviceCreateGpuInstance", ("a100",)): _mig_off,
    ("nvmlDeviceCreateGpuInstanceWithPlacement", ("a100",)): _mig_off,
    ("nvmlDeviceGetGpuInstanceById", ("a100",)): _mig_off,
    ("nvmlDeviceGetGpuInstanceProfileInfo", ("a100",)): _mig_off,
    ("nvmlDeviceGetGpuInstanceProfileInfoV", ("a100",)): _mig_off,
    ("nvmlDeviceGetGpuInstanceRemainingCapacity", ("a100",)): _mig_off,
    ("nvmlDeviceGetGpuInstances", ("a100",)): _mig_off,
    ("nvmlGpmSampleGet", ("a100",)): "GPM is Hopper and later: an A100 takes no GPM sample",
    ("nvmlGpmMigSampleGet", ("a100",)): "GPM is Hopper and later: an A100 takes no GPM sample",
    ("nvmlDeviceSetTemperatureThreshold", BOTH): "no threshold of a data-center board can be set: the "
        "acoustic target is the settable one, and its range is N/A (real A100 and GB200 nvidia-smi -q -x: "
        "supported_gpu_target_temp min and max N/A); shutdown and slowdown are the board's own",
    ("nvmlDeviceGetPlatformInfo", BOTH): "a rack location (chassis serial, slot, tray, host id, peer type) "
        "exists in GB200/GB300 NVL racks only (real T4 nvidia-smi -q -x, driver 595: Platform Info N/A "
        "but the module id, which nvmlDeviceGetModuleId gives)",
    ("nvmlDeviceGetUnrepairableMemoryFlag", ("a100",)): _hopper_on + " (real T4 report, driver 595: no "
        "unrepairable memory row; GB200's, 580: \"No\")",
    **{(name, BOTH): _blackwell_on for name in (
        "nvmlDeviceReadPRMCounters_v1", "nvmlDeviceReadWritePRM_v1",
        "nvmlDeviceWorkloadPowerProfileClearRequestedProfiles", "nvmlDeviceWorkloadPowerProfileGetCurrentProfiles",
        "nvmlDeviceWorkloadPowerProfileGetProfilesInfo", "nvmlDeviceWorkloadPowerProfileSetRequestedProfiles",
        "nvmlDeviceWorkloadPowerProfileUpdateProfiles_v1")},
}

#: (function, boards) -> the gap: the mock does not answer yet what the real board answers.
NOT_YET: dict = {}


def _table(table: dict, board: str) -> dict[str, str]:
    return {name: why for (name, boards), why in table.items() if board in boards}


def _in_scope() -> list[str]:
    with open(LIST, encoding="utf-8") as f:
        names = sorted({line.split("#", 1)[0].strip() for line in f} - {""})
    return [n for n in names if not VGPU_ONLY.search(n)]


@pytest.fixture(scope="module")
def answers(nvml_lib, tmp_path_factory) -> dict:
    """board -> the probe's {function: {"rc", "out"}} on that board."""
    header = build_module().nvml_header()
    found = {}
    for board in BOARDS:
        root = str(tmp_path_factory.mktemp(board))
        env = (mn.board(root, "h100", mig="enabled", layout=["1g.10gb"] * 7) if board == "h100"
               else mn.board(root, "a100"))
        done = subprocess.run([sys.executable, PROBE, header, LIST], env=clean_env(nvml_lib, env),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        found[board] = json.loads(done.stdout)
    return found


def _unanswered(result: dict) -> bool:
    return result["rc"] in (NOT_SUPPORTED, None, "undeclared")


def test_the_list_keeps_224_calls_in_scope_and_the_tables_name_only_them():
    names = _in_scope()
    assert len(names) == 224
    for name in (*(k[0] for k in (*REAL_BOARD, *NOT_YET, *WRONG)), *VALUES, *CODES, *RC_ONLY):
        assert name in names, name
    assert not set(REAL_BOARD) & set(NOT_YET)
    assert not set(RC_ONLY) & set(VALUES)


@pytest.mark.parametrize("board", BOARDS)
def test_every_call_answers_or_the_real_board_refuses_it_too(answers, board, capsys):
    results, real, gap = answers[board], _table(REAL_BOARD, board), _table(NOT_YET, board)
    names = _in_scope()
    answered = [n for n in names if not _unanswered(results[n])]
    unexplained = {n: results[n]["rc"] for n in names if _unanswered(results[n]) and n not in real and n not in gap}
    assert unexplained == {}, "answers NOT_SUPPORTED or is missing, and no table says why"
    faithful = [n for n in real if _unanswered(results[n])]
    with capsys.disabled():
        print(f"\n{board}: {len(answered)} of {len(names)} DCGM calls answer "
              f"({100 * len(answered) / len(names):.0f} %; {sum(results[n]['rc'] == SUCCESS for n in names)} "
              f"with SUCCESS); {len(faithful)} NOT_SUPPORTED as on the real board; "
              f"{len(gap)} not yet; {len(_value_checked(board, results))} answers checked for a value, "
              f"{len([n for n in names if results[n]['rc'] == SUCCESS and n in RC_ONLY])} SUCCESS and "
              f"{len([n for n in answered if results[n]['rc'] != SUCCESS and board in CODES.get(n, {})])} "
              "other codes for the code alone")


@pytest.mark.parametrize("board", BOARDS)
def test_what_the_real_board_refuses_the_mock_refuses(answers, board):
    refused = {n: answers[board][n]["rc"] for n in _table(REAL_BOARD, board)}
    assert refused == {n: NOT_SUPPORTED for n in refused}


@pytest.mark.parametrize("board,name", [(b, n) for (n, boards) in NOT_YET for b in boards])
def test_known_gaps(answers, board, name):
    why = _table(NOT_YET, board)[name]
    if _unanswered(answers[board][name]):
        pytest.xfail(why)
    pytest.fail(f"{name} now answers on {board} ({answers[board][name]['rc']}): take it out of NOT_YET")


def _value_checked(board: str, results: dict) -> list[str]:
    return [n for n in _in_scope() if results[n]["rc"] == SUCCESS and board in VALUES.get(n, {})]


def _needs_root(name: str) -> bool:
    return os.geteuid() != 0 and re.match(r"nvmlDevice(Set|Reset|Clear)", name) is not None


@pytest.mark.parametrize("board,name", [(b, n) for n in VALUES for b in VALUES[n]])
def test_answers_carry_the_boards_values(answers, board, name):
    if _needs_root(name):
        pytest.skip("NVML's setters answer NO_PERMISSION to a caller that is not root")
    what, check = VALUES[name][board]
    result = answers[board][name]
    buffers = result["out"] + result.get("after", [])
    right = result["rc"] == SUCCESS and check(buffers)
    if (name, board) in WRONG:          # strict: a fixed value must leave WRONG
        if right:
            pytest.fail(f"{name} now answers {what} on {board}: take it out of WRONG")
        pytest.xfail(WRONG[name, board])
    assert result["rc"] == SUCCESS, result["rc"]
    assert right, (what, buffers)


@pytest.mark.parametrize("board,name", [(b, n) for n in CODES for b in CODES[n]])
def test_other_answers_are_the_real_drivers_codes(answers, board, name):
    code, why = CODES[name][board]
    assert answers[board][name]["rc"] == code, why


@pytest.mark.parametrize("board", BOARDS)
def test_every_answer_is_checked(answers, board):
    """A call that answers must come with its check: a new answer needs a VALUES, RC_ONLY or CODES entry
    (here or in another dcgm_values*.py)."""
    results = answers[board]
    unchecked = {}
    for name in _in_scope():
        rc = results[name]["rc"]
        if _unanswered(results[name]) or (rc == SUCCESS and (board in VALUES.get(name, {}) or name in RC_ONLY)):
            continue
        if rc != SUCCESS and board in CODES.get(name, {}) or _needs_root(name):
            continue
        unchecked[name] = rc
    assert unchecked == {}, f"{board}: answers with no value or code check (name: return code)"
