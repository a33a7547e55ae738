"""Every NVML field id DCGM 4.6 asks nvmlDeviceGetFieldValues for (dcgm_nvml_fields.txt), on an
h100 with MIG on (seven 1g.10gb instances) and an a100 with MIG off, as in
test_dcgm_coverage.py: a field answered NOT_SUPPORTED fails unless a table says why,

    REAL_BOARD  the real board answers NOT_SUPPORTED too (a pass: the mock is faithful)
    NOT_YET     the state keeps nothing to answer it with (an xfail, strict)

and the fields this library answers for DCGM's dashboards are checked for their values:
the ECC counts per location, the NVLink throughput counters behind DCGM's NVLink bandwidth,
the links to NVSwitches, the per-link CRC count, the PCIe correctable errors, and the
thermal violation time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.native import mig_nodes as mn
from tests.native.conftest import HERE, clean_env
from tests.nativelibs import build_module

LIST = os.path.join(HERE, "dcgm_nvml_fields.txt")
PROBE = os.path.join(HERE, "probe_fields.py")
NOT_SUPPORTED = 3
ALL_LINKS = 0xFFFFFFFF
BOTH = ("h100", "a100")
#: Readings pinned to this second (MOCK_NVML_CLOCK), so the throughput counters are exact.
SECOND = 1000

_deprecated = "NVLink utilization counters are deprecated since Ampere: nvml.h names the throughput fields instead"
_remaps = "Ampere and later retire no pages, they remap rows"
_grace = "no C2C link: these boards sit in x86 hosts, not beside a Grace CPU"
_policy = "the state keeps no counter for this perf policy (violations.c)"

REAL_BOARD = {
    **{(f"NVML_FI_DEV_RETIRED_{kind}", BOTH): _remaps for kind in ("SBE", "DBE", "PENDING")},
    **{(f"NVML_FI_DEV_NVLINK_BANDWIDTH_{c}", BOTH): _deprecated for c in ("C0_L0", "C0_TOTAL", "C1_L0")},
    **{(f"NVML_FI_DEV_C2C_LINK_{what}", BOTH): _grace for what in ("COUNT", "GET_STATUS", "GET_MAX_BW")},
}
NOT_YET = {(f"NVML_FI_DEV_PERF_POLICY_{p}", BOTH): _policy
           for p in ("BOARD_LIMIT", "LOW_UTILIZATION", "RELIABILITY", "TOTAL_APP_CLOCKS", "TOTAL_BASE_CLOCKS")}


def _table(table: dict, board: str) -> dict[str, str]:
    return {name: why for (name, boards), why in table.items() if board in boards}


@pytest.fixture(scope="module")
def field_ids() -> dict[str, int]:
    """The DCGM list's names that the 12.4 nvml.h defines -> their ids."""
    with open(build_module().nvml_header(), encoding="utf-8") as f:
        defined = {m.group(1): int(m.group(2))
                   for m in re.finditer(r"#define\s+(NVML_FI_DEV_\w+)\s+(\d+)", f.read())}
    with open(LIST, encoding="utf-8") as f:
        names = {line.split("#", 1)[0].strip() for line in f} - {""}
    return {name: defined[name] for name in sorted(names) if name in defined}


def probe(nvml_lib, env: dict, *specs: str) -> dict:
    done = subprocess.run([sys.executable, PROBE, *specs], env=clean_env(nvml_lib, env), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def boards(tmp_path_factory) -> dict:
    out = {}
    for board in BOTH:
        root = str(tmp_path_factory.mktemp(f"fields-{board}"))
        env = (mn.board(root, "h100", mig="enabled", layout=["1g.10gb"] * 7) if board == "h100"
               else mn.board(root, "a100"))
        out[board] = {**env, "MOCK_NVML_CLOCK": str(SECOND)}
    return out


@pytest.fixture(scope="module")
def answers(nvml_lib, boards, field_ids) -> dict:
    found = {}
    for board, env in boards.items():
        raw = probe(nvml_lib, env, *(str(i) for i in field_ids.values()))
        found[board] = {name: raw[str(i)] for name, i in field_ids.items()}
    return found


def test_the_list_keeps_156_names_of_which_the_550_header_defines_112(field_ids):
    with open(LIST, encoding="utf-8") as f:
        names = {line.split("#", 1)[0].strip() for line in f} - {""}
    assert (len(names), len(field_ids)) == (156, 112)
    for name, _ in (*REAL_BOARD, *NOT_YET):
        assert name in field_ids, name


@pytest.mark.parametrize("board", BOTH)
def test_every_field_answers_or_a_table_says_why(answers, board, capsys):
    results, real, gap = answers[board], _table(REAL_BOARD, board), _table(NOT_YET, board)
    refused = {n for n, (ret, _, _) in results.items() if ret == NOT_SUPPORTED}
    assert {n: results[n][0] for n in refused - set(real) - set(gap)} == {}
    assert refused >= set(real), "the real board refuses these: so must the mock"
    with capsys.disabled():
        print(f"\n{board}: {len(results) - len(refused)} of {len(results)} DCGM fields answer; "
              f"{len(real)} NOT_SUPPORTED as on the real board; {len(refused & set(gap))} not yet")


@pytest.mark.parametrize("board,name", [(b, n) for (n, boards) in NOT_YET for b in boards])
def test_known_gaps(answers, board, name):
    if answers[board][name][0] == NOT_SUPPORTED:
        pytest.xfail(_table(NOT_YET, board)[name])
    pytest.fail(f"{name} now answers on {board}: take it out of NOT_YET")


@pytest.mark.parametrize("board", BOTH)
def test_ecc_counts_per_location_are_zero_on_a_fresh_node(answers, board):
    per_location = {n: v for n, v in answers[board].items()
                    if re.fullmatch(r"NVML_FI_DEV_ECC_[SD]BE_(VOL|AGG)_(L1|L2|DEV|REG|TEX)", n)}
    assert len(per_location) == 20
    assert per_location == {n: [0, 3, 0] for n in per_location}      # SUCCESS, unsigned long long, 0


@pytest.mark.parametrize("board, links, one_link, all_links", [
    # MB/s per link * links * the utilization's mean (steady 10..45: 27 %) * 1000 s, in KiB.
    ("h100", 18, 7003652343, 126065742187),
    ("a100", 12, 6797724609, 81572695312),
])
def test_nvlink_throughput_counts_kib_at_the_mean_traffic_of_every_active_link(nvml_lib, boards, board, links,
                                                                           one_link, all_links):
    tx, rx = 138, 139
    specs = [f"{tx}:0", f"{rx}:0", f"{tx}:{ALL_LINKS}", f"{rx}:{ALL_LINKS}", f"{tx}:{links}", "147"]
    got = probe(nvml_lib, boards[board], *specs)
    later = probe(nvml_lib, {**boards[board], "MOCK_NVML_CLOCK": str(SECOND + 1)}, f"{tx}:{ALL_LINKS}")
    assert got[specs[0]] == got[specs[1]] == [0, 3, one_link]      # unsigned long long
    assert got[specs[2]] == got[specs[3]] == [0, 3, all_links]
    assert got[specs[4]][0] == NOT_SUPPORTED                          # no such link
    assert got["147"] == [0, 1, links]                                # every link goes to an NVSwitch
    # A second later, one second's traffic more: DCGM's bandwidth is this difference.
    assert later[specs[2]][2] - all_links == {"h100": 126065742, "a100": 81572695}[board]


@pytest.mark.parametrize("board", BOTH)
def test_the_link_crc_count_the_pcie_correctable_errors_and_thermal_violations_start_at_zero(answers, board):
    for name, value_type in (("NVML_FI_DEV_NVLINK_ERROR_DL_CRC", 3), ("NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS", 1),
                             ("NVML_FI_DEV_PERF_POLICY_THERMAL", 3)):
        assert answers[board][name] == [0, value_type, 0], name
