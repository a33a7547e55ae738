"""The boards' MIG partition tables, as the facts measured them, and the rules over them:
validation, the device plugin's naming rule, a layout's placements, the compiled boot list.

Expected values are the facts' literals (docs/mig-facts.md §1), never the profiles' own.
"""

from __future__ import annotations

import copy
import functools
import math

import pytest
import yaml

from mokka.agent import desired as ds
from mokka.core import compile as comp
from mokka.core import mig
from mokka.engine import statekeys
from mokka.core import profile as prof

MIB = 1 << 20


@functools.lru_cache(maxsize=None)
def loaded(board: str) -> prof.Profile:
    return prof.load(board)


def table(board: str) -> dict[int, dict]:
    """The board's GPU instance profiles by ID."""
    block = loaded(board).devices[0]["mig"]
    return {p["id"]: p for p in block.get("gpu_instance_profiles") or []}


def lgip(p: dict) -> tuple:
    """A `nvidia-smi mig -lgip` row as the facts write it: name inst GiB SM CE DEC ENC JPEG OFA."""
    return (p["name"], p["instances"], f"{p['memory_mib'] / 1024:.2f}", p["multiprocessors"],
            p["copy_engines"], p["decoders"], p["encoders"], p["jpegs"], p["ofas"])


# ID: row, from the facts' table (ENC 0 everywhere).
FACTS = {
    "a100": {19: ("1g.5gb", 7, "4.75", 14, 1, 0, 0, 0, 0), 20: ("1g.5gb+me", 1, "4.75", 14, 1, 1, 0, 1, 1),
             15: ("1g.10gb", 4, "9.62", 14, 1, 1, 0, 0, 0), 14: ("2g.10gb", 3, "9.62", 28, 2, 1, 0, 0, 0),
             9: ("3g.20gb", 2, "19.50", 42, 3, 2, 0, 0, 0), 5: ("4g.20gb", 1, "19.50", 56, 4, 2, 0, 0, 0),
             0: ("7g.40gb", 1, "39.25", 98, 7, 5, 0, 1, 1)},
    "h100": {19: ("1g.10gb", 7, "9.75", 16, 1, 1, 0, 1, 0), 20: ("1g.10gb+me", 1, "9.75", 16, 1, 1, 0, 1, 1),
             15: ("1g.20gb", 4, "19.62", 26, 1, 1, 0, 1, 0), 14: ("2g.20gb", 3, "19.62", 32, 2, 2, 0, 2, 0),
             9: ("3g.40gb", 2, "39.50", 60, 3, 3, 0, 3, 0), 5: ("4g.40gb", 1, "39.50", 64, 4, 4, 0, 4, 0),
             0: ("7g.80gb", 1, "79.25", 132, 8, 7, 0, 7, 1)},
}


@pytest.mark.parametrize("board", sorted(FACTS))
def test_lgip_rows_are_the_facts(board):
    assert {pid: lgip(p) for pid, p in table(board).items()} == FACTS[board]


# What the facts give for the Blackwell boards (the rest is estimated, as the profiles say).
PARTIAL = {
    "b200": {19: ("1g.23gb", 7, "22.00", 18, 2, 1, 1), 15: ("1g.45gb", 4, "44.25", 30, 2, 1, 1),
             14: ("2g.45gb", 3, "44.25", 36, 4, 2, 2)},
    "gb200": {19: ("1g.23gb", 7, "22.00", 18, 2, 1, 1), 14: ("2g.47gb", 3, "45.50", 38, 4, 2, 2)},
}


@pytest.mark.parametrize("board", sorted(PARTIAL))
def test_blackwell_rows_keep_every_published_value(board):
    got = table(board)
    for pid, (name, inst, gib, sm, ce, dec, jpeg) in PARTIAL[board].items():
        p = got[pid]
        assert (p["name"], p["instances"], f"{p['memory_mib'] / 1024:.2f}", p["multiprocessors"],
                p["copy_engines"], p["decoders"], p["jpegs"]) == (name, inst, gib, sm, ce, dec, jpeg)
    names_ = {pid: p["name"] for pid, p in got.items()}
    assert names_ == ({20: "1g.23gb+me", 9: "3g.90gb", 5: "4g.90gb", 0: "7g.180gb", 15: "1g.45gb",
                       19: "1g.23gb", 14: "2g.45gb"} if board == "b200" else
                      {20: "1g.23gb+me", 9: "3g.93gb", 5: "4g.93gb", 0: "7g.186gb", 15: "1g.47gb",
                       19: "1g.23gb", 14: "2g.47gb"})
    assert (got[9]["copy_engines"], got[5]["copy_engines"], got[0]["copy_engines"], got[0]["ofas"],
            got[20]["ofas"]) == (6, 8, 16, 1, 1)


@pytest.mark.parametrize("board", ["a100", "h100", "b200", "gb200"])
def test_nvml_index_maps_to_the_id_on_every_board(board):
    assert {p["index"]: pid for pid, p in table(board).items()} == \
        {0: 19, 7: 20, 9: 15, 1: 14, 2: 9, 3: 5, 4: 0}


@pytest.mark.parametrize("board", ["a100", "h100", "b200", "gb200"])
def test_placements_are_lgipp(board):
    got = {pid: (p["placements"], p["placement_size"]) for pid, p in table(board).items()}
    assert got == {19: ([0, 1, 2, 3, 4, 5, 6], 1), 20: ([0, 1, 2, 3, 4, 5, 6], 1), 15: ([0, 2, 4, 6], 2),
                   14: ([0, 2, 4], 2), 9: ([0, 4], 4), 5: ([0], 4), 0: ([0], 8)}


def dp_gb(memory_mib: int, total_bytes: int) -> int:
    """go-nvlib's GB of a MIG profile name: round(ceil(8*MB*2^20/totB)/8 * ceil(totB/2^30)),
    Go's math.Round (half away from zero)."""
    eighths = math.ceil(8 * memory_mib * MIB / total_bytes)
    value = eighths / 8 * math.ceil(total_bytes / (1 << 30))
    return int(math.floor(value + 0.5))


@pytest.mark.parametrize("board", ["a100", "h100", "b200", "gb200"])
def test_device_plugin_derives_the_same_names_from_the_boards_memory(board):
    """The device plugin names a MIG device from its memory and its parent's total: the
    board's total must make that name the one nvidia-smi prints."""
    total = loaded(board).devices[0]["memory"]["total_bytes"]
    for p in table(board).values():
        size = p["name"].split(".")[1].split("+")[0]
        assert f"{dp_gb(p['memory_mib'], total)}gb" == size, p["name"]


def test_parent_totals_are_what_nvml_reports():
    totals = {b: loaded(b).devices[0]["memory"]["total_bytes"] // MIB for b in ("a100", "b200", "gb200")}
    assert totals == {"a100": 40960, "b200": 183359, "gb200": 189471}


def cis(board: str, pid: int) -> list[tuple]:
    return [(c["name"], c["id"], c["instances"], c["multiprocessors"])
            for c in table(board)[pid]["compute_instance_profiles"]]


def test_a100_compute_instance_profiles_are_lcip():
    assert cis("a100", 9) == [("1c.3g.20gb", 0, 3, 14), ("2c.3g.20gb", 1, 1, 28), ("3g.20gb", 2, 1, 42)]
    assert [row[1] for row in cis("a100", 5)] == [0, 1, 3]


@pytest.mark.parametrize("board", ["l40s", "t4", "gb300"])
def test_boards_without_a_partition_table(board):
    block = loaded(board).devices[0]["mig"]
    assert "gpu_instance_profiles" not in block and "layouts" not in block


@pytest.mark.parametrize("board", ["l40s", "t4"])
def test_l40s_and_t4_are_not_mig_capable(board):
    assert loaded(board).devices[0]["mig"]["max_gpu_instances"] == 0


# --- validation -------------------------------------------------------------------------

def h100_doc() -> dict:
    return yaml.safe_load(prof.read("h100")[1])


def with_mig(change) -> bytes:
    doc = h100_doc()
    change(doc["device_defaults"]["mig"])
    return yaml.safe_dump(doc).encode()


def gi(block, pid):
    return next(p for p in block["gpu_instance_profiles"] if p["id"] == pid)


INVALID = [
    ("a duplicate profile id", lambda m: gi(m, 20).update(id=19),
     "device_defaults.mig.gpu_instance_profiles[1].id", "duplicate id 19"),
    ("a duplicate profile index", lambda m: gi(m, 20).update(index=0),
     "device_defaults.mig.gpu_instance_profiles[1].index", "duplicate index 0"),
    ("a placement past the memory slices", lambda m: gi(m, 14).update(placements=[0, 2, 7]),
     "device_defaults.mig.gpu_instance_profiles[3].placements[2]", "7+2 runs past"),
    ("placements without a size", lambda m: gi(m, 14).pop("placement_size"),
     "device_defaults.mig.gpu_instance_profiles[3].placement_size", "is required"),
    ("a compute instance larger than its GPU instance",
     lambda m: gi(m, 14)["compute_instance_profiles"][0].update(slices=3),
     "device_defaults.mig.gpu_instance_profiles[3].compute_instance_profiles[0].slices", "more than"),
    ("a compute placement past its GPU instance",
     lambda m: gi(m, 14)["compute_instance_profiles"][0].update(placements=[0, 2]),
     "device_defaults.mig.gpu_instance_profiles[3].compute_instance_profiles[0].placements[1]",
     "2+1 runs past"),
    ("a layout naming no profile", lambda m: m["layouts"][0].update(gpu_instances=["9g.90gb"]),
     "device_defaults.mig.layouts[0].gpu_instances", "'9g.90gb' is not one of"),
    ("a layout over an instance count", lambda m: m["layouts"][0].update(gpu_instances=["4g.40gb"] * 2),
     "device_defaults.mig.layouts[0].gpu_instances", "do not fit"),
    ("a layout whose placements cannot all fit",
     lambda m: m["layouts"][0].update(gpu_instances=["4g.40gb", "2g.20gb", "2g.20gb"]),
     "device_defaults.mig.layouts[0].gpu_instances", "do not fit"),
    ("two layouts of one name", lambda m: m["layouts"][1].update(name="all-1g.10gb"),
     "device_defaults.mig.layouts[1].name", "duplicate name"),
    ("a chosen layout that is not declared", lambda m: m.update(layout="all-9g"),
     "device_defaults.mig.layout", "'all-9g' is not one of mig.layouts"),
    ("a profile name nvidia-smi would not print", lambda m: gi(m, 19).update(name="one slice"),
     "device_defaults.mig.gpu_instance_profiles[0].name", "not a MIG profile name"),
    ("a profile index past NVML's", lambda m: gi(m, 19).update(index=17),
     "device_defaults.mig.gpu_instance_profiles[0].index", "at most 16"),
]


@pytest.mark.parametrize("change,field,words", [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_a_bad_partition_table_names_its_field(change, field, words):
    with pytest.raises(prof.ProfileError) as info:
        prof.parse(with_mig(change), path="h100.yaml")
    assert info.value.field == field
    assert words in info.value.message


def test_control_the_unchanged_table_loads():
    assert prof.parse(with_mig(lambda m: None), path="h100.yaml").count == 8


# --- layouts and the compiled boot list ---------------------------------------------------

H100 = table("h100")


@pytest.mark.parametrize("wanted,placements", [
    # created as mig-parted creates them (largest first), each where the driver puts it
    (["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"], [(9, 4), (14, 0), (19, 2), (19, 3)]),
    (["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], [(9, 4), (14, 0), (19, 2), (19, 3)]),
    (["7g.80gb"], [(0, 0)]),
    # no public example shows 1g.20gb; the rule puts the first on the slice no compute reaches
    (["1g.20gb"] * 4, [(15, 6), (15, 4), (15, 0), (15, 2)]),
    ([], []),
], ids=["balanced, listed small first, created large first", "balanced, large first", "whole GPU",
        "four double-memory 1g", "nothing"])
def test_a_layout_gets_placements_that_fit(wanted, placements):
    planned = mig.plan_layout(list(H100.values()), wanted)
    assert [(p["profile_id"], p["placement_start"]) for p in planned] == placements
    slots = [s for p in planned for s in range(p["placement_start"], p["placement_start"] + p["placement_size"])]
    assert len(slots) == len(set(slots)) and all(0 <= s < 8 for s in slots)


def compiled(mig_layout: str = "", board: str = "h100") -> dict:
    path, text = prof.read(board)
    return ds.build(1, board, path, text, mig_layout=mig_layout).state


def test_boot_lists_the_layout_only_with_mig_on():
    assert all(g["mig"]["boot"] == [] for g in compiled()["gpus"])
    booted = compiled("all-balanced")["gpus"]
    assert [[(b["profile_id"], b["placement_start"], b["placement_size"]) for b in g["mig"]["boot"]]
            for g in booted] == [[(9, 4, 4), (14, 0, 2), (19, 2, 1), (19, 3, 1)]] * 8
    assert {(g["mig"]["mode_current"], g["mig"]["mode_pending"], g["mig"]["layout"]) for g in booted} == \
        {("enabled", "enabled", "all-balanced")}


def test_a_layout_in_the_profile_without_mig_on_boots_nothing():
    doc = h100_doc()
    doc["device_defaults"]["mig"]["layout"] = "all-7g.80gb"
    state = comp.compile_profile(prof.parse(yaml.safe_dump(doc).encode()))
    assert state["gpus"][0]["mig"]["boot"] == []
    doc["device_defaults"]["mig"]["mode_current"] = "enabled"
    state = comp.compile_profile(prof.parse(yaml.safe_dump(doc).encode()))
    assert state["gpus"][0]["mig"]["boot"] == [{"profile_id": 0, "placement_start": 0, "placement_size": 8}]


def test_the_gpus_of_one_board_share_one_table_and_keep_no_named_layouts():
    state = compiled("all-7g.80gb")
    assert [g["mig"]["table"] for g in state["gpus"]] == [0] * 8
    assert len(state["mig_tables"]) == 1 and len(state["mig_tables"][0]["gpu_instance_profiles"]) == 7
    block = state["gpus"][0]["mig"]
    assert "layouts" not in block and "gpu_instance_profiles" not in block
    keys = {statekeys.text(k) for k in statekeys.gpu_keys()}
    assert {"mig.table", "mig.boot.%u.profile_id", "mig.boot.%u.placement_start",
            "mig.boot.%u.placement_size"} <= keys
    assert not any(k.startswith(("mig.layouts", "mig.gpu_instance_profiles")) for k in keys)
    table_keys = {statekeys.text(k) for k in statekeys.mig_table_keys()}
    assert {"gpu_instance_profiles.%u.memory_mib", "gpu_instance_profiles.%u.placements.%u",
            "gpu_instance_profiles.%u.compute_instance_profiles.%u.multiprocessors"} <= table_keys


def test_gpus_with_different_tables_keep_each_its_own():
    one, two = [{"index": 0, "id": 0}], [{"index": 0, "id": 0}, {"index": 1, "id": 5}]
    gpus = [{"mig": {"gpu_instance_profiles": one, "boot": []}}, {"mig": {"gpu_instance_profiles": two}},
            {"mig": {"gpu_instance_profiles": list(one)}}, {"mig": {"max_gpu_instances": 0}}, {}]
    assert comp.share_mig_tables(gpus) == [{"gpu_instance_profiles": one}, {"gpu_instance_profiles": two}]
    assert gpus == [{"mig": {"table": 0, "boot": []}}, {"mig": {"table": 1}}, {"mig": {"table": 0}},
                    {"mig": {"max_gpu_instances": 0}}, {}]


@pytest.mark.parametrize("board,layout,words", [
    ("h100", "all-9g", "not one of the profile's mig.layouts (all-1g.10gb,"),
    ("l40s", "all-balanced", "no MIG partition table"),
    ("gb300", "all-balanced", "no MIG partition table"),
])
def test_mig_layout_flag_refuses_what_the_profile_cannot_boot(board, layout, words):
    with pytest.raises(ds.DesiredError) as info:
        compiled(layout, board)
    assert words in info.value.reason and info.value.reason.startswith(f"--mig-layout {layout}:")


def test_mig_layout_flag_changes_only_the_mig_block():
    plain, booted = h100_doc(), yaml.safe_load(ds.staged_text(h100_doc(), 8, "all-balanced"))
    for doc in (plain, booted):
        doc["system"].pop("num_devices", None)
    booted_mig, plain_mig = booted["device_defaults"].pop("mig"), plain["device_defaults"].pop("mig")
    assert booted == plain
    assert booted_mig == {**copy.deepcopy(plain_mig), "mode_current": "enabled", "mode_pending": "enabled",
                          "layout": "all-balanced"}
