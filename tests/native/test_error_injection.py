"""ECC and NVLink errors a health controller can test (``mokka ctl ecc``, ``ctl nvlink``) on a
staged h100 and a100: pynvml in another process reads the counters, the field values and the
remapped rows, a waiter gets the ECC events and the Xids the board raises (94 or 95 where it
contains errors, 48 where it does not; 63, or 64 once no spare row is left); a GPU reset
clears the volatile counts and keeps the aggregate ones and the remapped rows."""

from __future__ import annotations

import json
import os

import pytest

from mokka.core import names
from tests.native import mig_nodes as mn
from tests.native.test_health_controller import ctl, line_of, python

WAITER = """
import json, sys, pynvml as n
n.nvmlInit()
event_set = n.nvmlEventSetCreate()
gpu = n.nvmlDeviceGetHandleByIndex(0)
n.nvmlDeviceRegisterEvents(gpu, n.nvmlEventTypeXidCriticalError | n.nvmlEventTypeSingleBitEccError
                           | n.nvmlEventTypeDoubleBitEccError, event_set)
print(json.dumps(["ready"]), flush=True)
for _ in range(int(sys.argv[1])):
    data = n.nvmlEventSetWait_v2(event_set, 30000)
    print(json.dumps([data.eventType, data.eventData]), flush=True)
"""

READ = """
import json, sys, pynvml as n
n.nvmlInit()
g = n.nvmlDeviceGetHandleByIndex(0)
out = {}
for scope, name in ((0, "volatile"), (1, "aggregate")):
    out[name] = [n.nvmlDeviceGetTotalEccErrors(g, t, scope) for t in (0, 1)]
    out[name + "_dram"] = [n.nvmlDeviceGetMemoryErrorCounter(g, t, scope, 2) for t in (0, 1)]
    d = n.nvmlDeviceGetDetailedEccErrors(g, 1, scope)
    out[name + "_detailed_dbe"] = [d.l1Cache, d.l2Cache, d.deviceMemory, d.registerFile]
ids = [3, 4, 5, 6]            # NVML_FI_DEV_ECC_SBE_VOL_TOTAL, DBE_VOL, SBE_AGG, DBE_AGG
out["fields"] = [v.value.ullVal for v in n.nvmlDeviceGetFieldValues(g, ids)]
try:
    out["remapped"] = list(n.nvmlDeviceGetRemappedRows(g))
except n.NVMLError as exc:
    out["remapped"] = exc.value
out["remapped_fields"] = [v.value.uiVal for v in n.nvmlDeviceGetFieldValues(g, [142, 143, 144, 145])]
print(json.dumps(out))
"""

LINKS = """
import json, sys, pynvml as n
n.nvmlInit()
g = n.nvmlDeviceGetHandleByIndex(0)
out = {"counter": [n.nvmlDeviceGetNvLinkErrorCounter(g, 2, c) for c in range(5)],
       "link3": n.nvmlDeviceGetNvLinkErrorCounter(g, 3, 2)}
ids = [34, 38, 41, 48, 55]    # CRC_FLIT_L2, CRC_FLIT_TOTAL, CRC_DATA_L2, REPLAY_L2, RECOVERY_L2
out["fields"] = [v.value.ullVal for v in n.nvmlDeviceGetFieldValues(g, ids)]
print(json.dumps(out))
"""

SBE, DBE, XID = 1, 2, 8       # nvmlEventType_t


@pytest.fixture
def h100(tmp_path) -> dict:
    return mn.board(str(tmp_path), "h100")


def read(lib: str, env: dict, code: str = READ) -> dict:
    proc = python(lib, env, code)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out)


def test_injected_ecc_errors_raise_the_counters_rows_and_events_a_controller_reads(nvml_lib, h100):
    waiter = python(nvml_lib, h100, WAITER, "4")
    try:
        assert line_of(waiter) == ["ready"]
        sbe = ctl(nvml_lib, h100, "ecc", "0", "sbe", "--count", "3")
        assert (sbe.returncode, sbe.stderr) == (0, ""), sbe.stderr
        assert sbe.stdout == ("GPU 0 (GPU-01000100-0000-0000-0000-000000000000): 3 SBE in dram: "
                              "volatile SBE 3; aggregate SBE 3\n")
        dbe = ctl(nvml_lib, h100, "ecc", "0", "dbe", "--node-name", "kind-worker")
        assert dbe.returncode == 0, dbe.stderr
        assert dbe.stdout == ("GPU 0 (GPU-01000100-0000-0000-0000-000000000000): 1 DBE in dram: "
                              "volatile DBE 1; aggregate DBE 1; remapped rows (uncorrectable) 1, "
                              "pending until a reset\n")
        assert [line_of(waiter) for _ in range(4)] == [[SBE, 0], [DBE, 0], [XID, 94], [XID, 63]]
        assert waiter.wait(30) == 0
    finally:
        waiter.kill()
    assert read(nvml_lib, h100) == {
        "volatile": [3, 1], "volatile_dram": [3, 1], "volatile_detailed_dbe": [0, 0, 1, 0],
        "aggregate": [3, 1], "aggregate_dram": [3, 1], "aggregate_detailed_dbe": [0, 0, 1, 0],
        "fields": [3, 1, 3, 1], "remapped": [0, 1, 1, 0], "remapped_fields": [0, 1, 1, 0]}
    again = ctl(nvml_lib, h100, "ecc", "0", "sbe", "--count", "2")
    assert again.returncode == 0, again.stderr
    assert read(nvml_lib, h100)["volatile"] == [5, 1]

    reset = mn.nvidia_smi(nvml_lib, h100, "-r", "-i", "0")            # NVIDIA's 550 over the library
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert read(nvml_lib, h100) == {
        "volatile": [0, 0], "volatile_dram": [0, 0], "volatile_detailed_dbe": [0, 0, 0, 0],
        "aggregate": [5, 1], "aggregate_dram": [5, 1], "aggregate_detailed_dbe": [0, 0, 1, 0],
        "fields": [0, 0, 5, 1], "remapped": [0, 1, 0, 0], "remapped_fields": [0, 1, 0, 0]}


@pytest.mark.parametrize("profile", ["h100", "a100"])
def test_ctl_reset_keeps_what_a_gpu_reset_keeps(nvml_lib, tmp_path, profile):
    node = mn.board(str(tmp_path), profile)
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    raised = ctl(nvml_lib, node, "ecc", "0", "dbe", "--count", "2", "--kmsg-path", str(kmsg),
                 "--node-name", "kind-worker")
    assert raised.returncode == 0, raised.stderr
    got = read(nvml_lib, node)
    assert (got["volatile"], got["aggregate"], got["remapped"]) == ([0, 2], [0, 2], [0, 2, 1, 0])
    bus = {"h100": "0000:1a:00", "a100": "0000:07:00"}[profile]
    assert kmsg.read_text().splitlines() == [
        f"<3>NVRM: Xid (PCI:{bus}): 94, pid='<unknown>', name=<unknown>, Contained ECC error node=kind-worker",
        f"<3>NVRM: Xid (PCI:{bus}): 63, pid='<unknown>', name=<unknown>, ECC page retirement or row "
        "remapping recording event node=kind-worker"]
    done = ctl(nvml_lib, node, "reset", "0")
    assert done.returncode == 0, done.stderr
    got = read(nvml_lib, node)
    assert (got["volatile"], got["aggregate"], got["remapped"]) == ([0, 0], [0, 2], [0, 2, 0, 0])


def test_both_nvidia_smis_report_the_injected_counts(nvml_lib, h100):
    assert ctl(nvml_lib, h100, "ecc", "0", "sbe", "--count", "3").returncode == 0
    assert ctl(nvml_lib, h100, "ecc", "0", "dbe").returncode == 0
    theirs = mn.nvidia_smi(nvml_lib, h100, "-q", "-d", "ECC", "-i", "0")
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    rows = [" ".join(r.split()) for r in theirs.stdout.splitlines()]
    at = rows.index("Volatile")
    assert rows[at + 1:at + 3] == ["SRAM Correctable : 0", "SRAM Uncorrectable Parity : 0"]
    assert "DRAM Correctable : 3" in rows[at:at + 8] and "DRAM Uncorrectable : 1" in rows[at:at + 8]
    import subprocess
    import sys
    from tests.native.conftest import REPO, clean_env
    ours = subprocess.run([sys.executable, "-m", "mokka", "nvidia-smi", "-q", "-d", "ECC", "-i", "0"],
                          env=clean_env(nvml_lib, h100), capture_output=True, text=True, timeout=60, cwd=REPO)
    assert ours.returncode == 0, ours.stderr
    def untimed(rows: list) -> list:                 # the two runs may fall in different seconds
        return [r for r in rows if not r.startswith("Timestamp")]
    assert untimed([" ".join(r.split()) for r in ours.stdout.splitlines()][2:]) == untimed(rows[2:])


def test_injected_nvlink_errors_read_back_on_that_link(nvml_lib, h100):
    done = ctl(nvml_lib, h100, "nvlink", "0", "2", "crc-flit", "--count", "5")
    assert (done.returncode, done.stdout) == (0, "GPU 0 (GPU-01000100-0000-0000-0000-000000000000): "
                                                 "NVLink 2 crc-flit errors 5\n"), done.stderr
    assert ctl(nvml_lib, h100, "nvlink", "0", "2", "replay").returncode == 0
    assert read(nvml_lib, h100, LINKS) == {"counter": [1, 0, 5, 0, 0], "link3": 0, "fields": [5, 5, 0, 1, 0]}
    assert mn.nvidia_smi(nvml_lib, h100, "-r", "-i", "0").returncode == 0
    assert read(nvml_lib, h100, LINKS) == {"counter": [0, 0, 0, 0, 0], "link3": 0, "fields": [0, 0, 0, 0, 0]}


@pytest.mark.parametrize("args, line", [
    (("ecc", "9", "sbe"), "ctl: 9: no such GPU here (give an index from 0 to 7 or a UUID)"),
    (("ecc", "0", "sbe", "--count", "0"), "ctl: --count 0: expected an integer from 1 to 1000000"),
    (("ecc", "0", "dbe", "--count", "x"), "ctl: --count x: expected an integer from 1 to 1000000"),
    (("nvlink", "0", "18", "crc-flit"), "ctl: 18: not an NVLink of this GPU; expected a link from 0 to 17"),
    (("nvlink", "0", "-1", "replay"), "ctl: -1: not an NVLink of this GPU; expected a link from 0 to 17"),
])
def test_a_bad_target_link_or_count_is_one_line_and_injects_nothing(nvml_lib, h100, args, line):
    done = ctl(nvml_lib, h100, *args)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", line + "\n")
    overrides = os.path.join(os.path.dirname(h100[names.ENV_NVML_CONFIG]), names.OVERRIDES_DIR)
    assert not os.path.exists(overrides)


def test_an_unknown_error_kind_is_a_usage_error(nvml_lib, h100):
    done = ctl(nvml_lib, h100, "ecc", "0", "tbe")
    assert done.returncode == 2 and done.stdout == ""
    assert "argument KIND: invalid choice: 'tbe' (choose from 'sbe', 'dbe')" in done.stderr
    done = ctl(nvml_lib, h100, "nvlink", "0", "2", "crc")
    assert done.returncode == 2 and "invalid choice: 'crc'" in done.stderr


def test_ecc_off_refuses_in_one_line(nvml_lib, h100):
    from mokka.engine import overrides
    overrides.update(os.path.join(os.path.dirname(h100[names.ENV_NVML_CONFIG]), names.OVERRIDES_DIR), 0,
                     {"ecc": {"mode_current": "disabled", "mode_pending": "disabled"}})
    done = ctl(nvml_lib, h100, "ecc", "0", "dbe")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("ctl: GPU 0 (GPU-01000100-0000-0000-0000-000000000000): ECC is off, so it counts no "
                           "ECC errors; turn it on first (nvidia-smi -e 1, then nvidia-smi -r)\n")


RETIRED = """
import json, pynvml as n
n.nvmlInit()
g = n.nvmlDeviceGetHandleByIndex(0)
print(json.dumps([n.nvmlDeviceGetRetiredPages(g, 1), [p["address"] for p in n.nvmlDeviceGetRetiredPages_v2(g, 1)],
                  n.nvmlDeviceGetRetiredPagesPendingStatus(g), n.nvmlDeviceGetTotalEccErrors(g, 1, 0),
                  [v.value.uiVal for v in n.nvmlDeviceGetFieldValues(g, [29, 30, 31])]]))
"""


def test_a_double_bit_error_retires_a_page_on_a_board_before_ampere(nvml_lib, tmp_path):
    t4 = mn.board(str(tmp_path), "t4")
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    done = ctl(nvml_lib, t4, "ecc", "0", "dbe", "--count", "2", "--kmsg-path", str(kmsg))
    assert done.stdout == ("GPU 0 (GPU-00000074-0000-0000-0000-000000000000): 2 DBE in dram: volatile DBE 2; "
                           "aggregate DBE 2; retired pages (double bit) 2, pending until a reset\n"), done.stderr
    assert read(nvml_lib, t4, RETIRED) == [[0x100000, 0x101000], [0x100000, 0x101000], 1, 2, [0, 2, 1]]
    assert [line.split(": ")[2].split(",")[0] for line in kmsg.read_text().splitlines()] == ["48", "63"]
    assert mn.nvidia_smi(nvml_lib, t4, "-r", "-i", "0").returncode == 0
    assert read(nvml_lib, t4, RETIRED) == [[0x100000, 0x101000], [0x100000, 0x101000], 0, 0, [0, 2, 0]]
    no_links = ctl(nvml_lib, t4, "nvlink", "0", "0", "replay")
    assert (no_links.returncode, no_links.stderr) == (1, "ctl: GPU 0 (GPU-00000074-0000-0000-0000-000000000000) "
                                                         "has no NVLink; inject NVLink errors on a GPU that has one\n")


def test_past_64_retired_pages_the_retirement_fails(nvml_lib, tmp_path):
    t4 = mn.board(str(tmp_path), "t4")
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    done = ctl(nvml_lib, t4, "ecc", "0", "dbe", "--count", "66", "--kmsg-path", str(kmsg))
    assert done.stdout.endswith("retired pages (double bit) 64, pending until a reset; page retirement failed "
                                "for 2 (no page left to retire: 64 pages retired)\n"), done.stderr
    assert [line.split(": ")[2].split(",")[0] for line in kmsg.read_text().splitlines()] == ["48", "63", "64"]
    assert read(nvml_lib, t4, RETIRED)[2:] == [1, 66, [0, 64, 1]]


def test_counts_cleared_through_nvml_read_zero_and_ctl_keeps_its_document_until_reset_lasting(nvml_lib, h100):
    assert ctl(nvml_lib, h100, "ecc", "0", "dbe").returncode == 0
    cleared = mn.nvidia_smi(nvml_lib, h100, "-p", "1", "-i", "0")     # NVIDIA's 550, as root
    assert cleared.stdout == "Reset aggregate ECC errors to zero for GPU 00000000:1A:00.0.\nAll done.\n"
    assert read(nvml_lib, h100)["aggregate"] == [0, 0]
    status = json.loads(ctl(nvml_lib, h100, "status").stdout)
    assert status["gpus"][0]["lasting"] == {
        "ecc": {"errors": {"aggregate": {"double_bit": {"total": 1, "device_memory": 1}}}},
        "remapped_rows": {"uncorrectable": 1}}
    assert ctl(nvml_lib, h100, "reset", "--lasting").returncode == 0
    got = read(nvml_lib, h100)
    assert (got["volatile"], got["aggregate"], got["remapped"]) == ([0, 0], [0, 0], [0, 0, 0, 0])


def test_a_lasting_document_holding_a_date_refuses_the_injection_in_one_line(nvml_lib, h100):
    overrides = os.path.join(os.path.dirname(h100[names.ENV_NVML_CONFIG]), names.OVERRIDES_DIR)
    os.makedirs(overrides)
    path = os.path.join(overrides, "lasting-gpu0.yaml")
    with open(path, "w") as f:
        f.write("remapped_rows: {uncorrectable: 2024-01-01}\n")
    done = ctl(nvml_lib, h100, "ecc", "0", "dbe")
    assert (done.returncode, done.stdout) == (1, "")
    companion = path[:-len("yaml")] + "nvml"                   # the library says, too, that it ignores it
    assert done.stderr.splitlines() == [
        f"mock NVML: ignoring overrides {path}: {companion}: missing: run 'mokka compile --companion {path}'", (
        f"ctl: {path}: remapped_rows.uncorrectable is a date, not an integer; correct it or drop the GPU's "
        "overrides (ctl reset GPU --lasting), then run this again")]
    assert read(nvml_lib, h100)["volatile"] == [0, 0]


SRAM = """
import json, pynvml as n
n.nvmlInit()
g = n.nvmlDeviceGetHandleByIndex(0)
print(json.dumps([[n.nvmlDeviceGetMemoryErrorCounter(g, t, s, 7) for t in (0, 1)] for s in (0, 1)]
                 + [n.nvmlDeviceGetTotalEccErrors(g, 1, 0)]))
"""


@pytest.mark.parametrize("profile", ["h100", "t4"])          # SEC-DED split from Ampere on; one count before
def test_sram_errors_count_in_the_sram(nvml_lib, tmp_path, profile):
    node = mn.board(str(tmp_path), profile)
    assert ctl(nvml_lib, node, "ecc", "0", "sbe", "--location", "sram", "--count", "4").returncode == 0
    done = ctl(nvml_lib, node, "ecc", "0", "dbe", "--location", "sram", "--count", "2")
    assert done.stdout.endswith("2 DBE in sram: volatile DBE 2; aggregate DBE 2\n"), done.stderr
    assert read(nvml_lib, node, SRAM) == [[4, 2], [4, 2], 2]
    assert mn.nvidia_smi(nvml_lib, node, "-r", "-i", "0").returncode == 0
    assert read(nvml_lib, node, SRAM) == [[0, 0], [4, 2], 0]


def test_a_lasting_document_written_by_hand_compiles_and_reads_back(nvml_lib, h100):
    import subprocess
    import sys
    from tests.native.conftest import REPO
    overrides = os.path.join(os.path.dirname(h100[names.ENV_NVML_CONFIG]), names.OVERRIDES_DIR)
    os.makedirs(overrides)
    path = os.path.join(overrides, "lasting-gpu0.yaml")
    with open(path, "w") as f:
        f.write('{"remapped_rows": {"uncorrectable": 7}}\n')                  # JSON, as YAML takes it
    done = subprocess.run([sys.executable, "-m", "mokka", "compile", "--companion", path], capture_output=True,
                          text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert read(nvml_lib, h100)["remapped"] == [0, 7, 0, 0]


def test_a_lost_gpu_is_one_line_and_gets_nothing(nvml_lib, h100):
    assert ctl(nvml_lib, h100, "set", "0", "lost=true").returncode == 0
    for args in (("ecc", "0", "sbe"), ("nvlink", "0", "2", "replay")):
        done = ctl(nvml_lib, h100, *args)
        assert (done.returncode, done.stdout) == (1, ""), args
        assert done.stderr == "ctl: GPU 0 (GPU-01000100-0000-0000-0000-000000000000): GPU is lost; nothing injected\n"


@pytest.mark.parametrize("nobody, expected, left", [(False, 0, [0, 0]), (True, 4, [1, 1])])   # SUCCESS; NO_PERMISSION
def test_clear_ecc_error_counts_is_root_only(nvml_lib, h100, nobody, expected, left):
    from tests.native.test_setters import settable
    assert ctl(nvml_lib, h100, "ecc", "0", "sbe").returncode == 0
    for counter in (0, 1):                                       # NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC
        assert settable(nvml_lib, h100, 0, "ClearEccErrorCounts", counter, nobody=nobody) == expected
    got = read(nvml_lib, h100)
    assert [got["volatile"][0], got["aggregate"][0]] == left


XIDS = """
import json, sys, pynvml as n
n.nvmlInit()
event_set = n.nvmlEventSetCreate()
n.nvmlDeviceRegisterEvents(n.nvmlDeviceGetHandleByIndex(0), n.nvmlEventTypeXidCriticalError, event_set)
print(json.dumps(["ready"]), flush=True)
print(json.dumps([n.nvmlEventSetWait_v2(event_set, 30000).eventData for _ in range(int(sys.argv[1]))]), flush=True)
"""


@pytest.mark.parametrize("profile, args, xids", [
    ("a100", (), [94, 63]),                                  # GA100: contained, the default
    ("a100", ("--containment", "uncontained"), [95, 63]),
    ("h100", ("--containment", "contained"), [94, 63]),
    ("l40s", (), [48, 63]),                                  # Ada: rows remapped, no containment
], ids=["a100", "a100 uncontained", "h100 contained", "l40s"])
def test_a_double_bit_error_raises_the_xids_the_board_would(nvml_lib, tmp_path, profile, args, xids):
    node = mn.board(str(tmp_path), profile)
    waiter = python(nvml_lib, node, XIDS, "2")
    try:
        assert line_of(waiter) == ["ready"]
        done = ctl(nvml_lib, node, "ecc", "0", "dbe", *args)
        assert done.returncode == 0, done.stderr
        assert line_of(waiter) == xids
    finally:
        waiter.kill()


def test_past_the_spare_rows_remapping_fails_and_the_failure_stays_after_a_reset(nvml_lib, h100):
    waiter = python(nvml_lib, h100, XIDS, "3")
    try:
        assert line_of(waiter) == ["ready"]
        done = ctl(nvml_lib, h100, "ecc", "0", "dbe", "--count", "515")
        assert done.stdout == ("GPU 0 (GPU-01000100-0000-0000-0000-000000000000): 515 DBE in dram: "
                               "volatile DBE 515; aggregate DBE 515; remapped rows (uncorrectable) 512, pending "
                               "until a reset; row remapping failed for 3 (no spare row left: 512 rows remapped), "
                               "failure recorded\n"), done.stderr
        assert line_of(waiter) == [94, 63, 64]
    finally:
        waiter.kill()
    got = read(nvml_lib, h100)
    assert (got["remapped"], got["remapped_fields"]) == ([0, 512, 1, 1], [0, 512, 1, 1])
    assert mn.nvidia_smi(nvml_lib, h100, "-r", "-i", "0").returncode == 0
    assert read(nvml_lib, h100)["remapped"] == [0, 512, 0, 1]


@pytest.mark.parametrize("profile, args, line", [
    ("t4", ("dbe", "--containment", "contained"),
     "ctl: --containment contained: GPU 0 (GPU-00000074-0000-0000-0000-000000000000) has no error containment "
     "(GA100, GH100 and later boards have it), so a double-bit error raises Xid 48; leave it out"),
    ("h100", ("sbe", "--containment", "uncontained"),
     "ctl: --containment uncontained: a single-bit error is corrected, not contained; give --containment with "
     "dbe only"),
], ids=["t4", "sbe"])
def test_containment_the_board_or_error_cannot_have_is_one_line_and_injects_nothing(nvml_lib, tmp_path, profile,
                                                                                      args, line):
    node = mn.board(str(tmp_path), profile)
    done = ctl(nvml_lib, node, "ecc", "0", *args)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", line + "\n")
    assert not os.path.exists(os.path.join(os.path.dirname(node[names.ENV_NVML_CONFIG]), names.OVERRIDES_DIR))
