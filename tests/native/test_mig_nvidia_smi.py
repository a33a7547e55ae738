"""NVIDIA's nvidia-smi 550 partitions a staged a100 and h100 with its own MIG commands over
the mock library, unmodified; ours prints the same, step by step, over the same node.

The boards' tables are the facts' (../shared/docs/mig-facts.md: nvidia-smi mig -lgip rows
and -lgipp placements as the MIG user guide and captures print them); the ids are those
NVIDIA's driver hands out (a GPU instance's id follows from its placement).
"""

from __future__ import annotations

import os
import re

import pytest

from mokka.core import names
from mokka.core import profile as prof
from tests.native.staged import nvml_build, ok, staged_node  # noqa: F401 (fixtures)

BOARDS = {
    "h100": {"bus": "00000000:1A:00.0", "gpu": "NVIDIA H100 80GB HBM3",
             "uuid": "GPU-01000100-0000-0000-0000-000000000000",
             "names": {19: "1g.10gb", 14: "2g.20gb", 9: "3g.40gb"}},
    "a100": {"bus": "00000000:07:00.0", "gpu": "NVIDIA A100-SXM4-40GB",
             "uuid": "GPU-12345678-1234-1234-1234-123456780000",
             "names": {19: "1g.5gb", 14: "2g.10gb", 9: "3g.20gb"}},
}

#: -lgip's rows as (name, ID, free/total, GiB, P2P, SM, DEC, ENC, CE, JPEG, OFA), the facts' table.
PROFILE_ROWS = {
    "h100": [("MIG 1g.10gb", 19, "7/7", "9.75", "No", 16, 1, 0, 1, 1, 0),
             ("MIG 1g.10gb+me", 20, "1/1", "9.75", "No", 16, 1, 0, 1, 1, 1),
             ("MIG 1g.20gb", 15, "4/4", "19.62", "No", 26, 1, 0, 1, 1, 0),
             ("MIG 2g.20gb", 14, "3/3", "19.62", "No", 32, 2, 0, 2, 2, 0),
             ("MIG 3g.40gb", 9, "2/2", "39.50", "No", 60, 3, 0, 3, 3, 0),
             ("MIG 4g.40gb", 5, "1/1", "39.50", "No", 64, 4, 0, 4, 4, 0),
             ("MIG 7g.80gb", 0, "1/1", "79.25", "No", 132, 7, 0, 8, 7, 1)],
    "a100": [("MIG 1g.5gb", 19, "7/7", "4.75", "No", 14, 0, 0, 1, 0, 0),
             ("MIG 1g.5gb+me", 20, "1/1", "4.75", "No", 14, 1, 0, 1, 1, 1),
             ("MIG 1g.10gb", 15, "4/4", "9.62", "No", 14, 1, 0, 1, 0, 0),
             ("MIG 2g.10gb", 14, "3/3", "9.62", "No", 28, 1, 0, 2, 0, 0),
             ("MIG 3g.20gb", 9, "2/2", "19.50", "No", 42, 2, 0, 3, 0, 0),
             ("MIG 4g.20gb", 5, "1/1", "19.50", "No", 56, 2, 0, 4, 0, 0),
             ("MIG 7g.40gb", 0, "1/1", "39.25", "No", 98, 5, 0, 7, 1, 1)],
}
PLACEMENTS = """\
GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1
GPU  0 Profile ID 20 Placements: {0,1,2,3,4,5,6}:1
GPU  0 Profile ID 15 Placements: {0,2,4,6}:2
GPU  0 Profile ID 14 Placements: {0,2,4}:2
GPU  0 Profile ID  9 Placements: {0,4}:4
GPU  0 Profile ID  5 Placement : {0}:4
GPU  0 Profile ID  0 Placement : {0}:8
"""
MIG_UUID = re.compile(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
#: The MIG UUID of (the h100's GPU 0, GPU instance 2, compute instance 0): derived, so the same
#: on every node with these GPUs and in every process.
H100_GI2_CI0 = "MIG-7a71e86f-ba16-5180-87e5-dd110ba63f21"


@pytest.fixture(scope="module")
def nodes(staged_node, tmp_path_factory):
    """An a100 and an h100 of this module's own: its partitions stay here."""
    out = {}
    for board in BOARDS:
        path = tmp_path_factory.mktemp(f"mig-{board}") / f"{board}-mig.yaml"
        path.write_bytes(prof.load(board).text)
        out[board] = staged_node(str(path))
    return out


def clear(node) -> None:
    """Back to the partitions the profile boots with (what the agent does at boot)."""
    path = os.path.join(node.overlay.driver_config, names.MIG_STATE_FILE)
    if os.path.exists(path):
        os.unlink(path)


@pytest.fixture(params=sorted(BOARDS))
def board(request, nodes):
    node = nodes[request.param]
    clear(node)
    yield request.param, node
    clear(node)


def rows(text: str) -> list:
    """A mig table's rows: the cells of each line that starts with a GPU index."""
    return [tuple(c for c in re.split(r"\s{2,}", line.strip("| ").strip()) if c)
            for line in text.splitlines() if re.match(r"\|\s+\d+\s", line)]


def lgip_rows(text: str) -> list:
    lines = text.splitlines()
    out = []
    for first, second in zip(lines, lines[1:]):
        m = re.match(r"\|\s+\d+\s+(MIG \S+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|$", first)
        if m:
            ce, jpeg, ofa = (int(x) for x in second.strip("| ").split())
            name, pid, free, gib, p2p, sm, dec, enc = m.groups()
            out.append((name, int(pid), free, gib, p2p, int(sm), int(dec), int(enc), ce, jpeg, ofa))
    return out


def sequence(board: str) -> list:
    """(arguments, expected exit status, a check of stdout) of the issue's walk through MIG."""
    b = BOARDS[board]
    bus, n = b["bus"], b["names"]
    changed = "{}d MIG Mode for GPU {bus}\nAll done.\n"
    mode = ["--query-gpu=mig.mode.current,mig.mode.pending", "--format=csv,noheader", "-i", "0"]
    created = (f"Successfully created GPU instance ID 13 on GPU  0 using profile MIG {n[19]} (ID 19)\n"
               f"Successfully created compute instance ID  0 on GPU  0 GPU instance ID 13 using profile "
               f"MIG {n[19]} (ID  0)\n"
               f"Successfully created GPU instance ID  5 on GPU  0 using profile MIG {n[14]} (ID 14)\n"
               f"Successfully created compute instance ID  0 on GPU  0 GPU instance ID  5 using profile "
               f"MIG {n[14]} (ID  1)\n"
               f"Successfully created GPU instance ID  1 on GPU  0 using profile MIG {n[9]} (ID  9)\n"
               f"Successfully created compute instance ID  0 on GPU  0 GPU instance ID  1 using profile "
               f"MIG {n[9]} (ID  2)\n")
    return [
        (["-i", "0", "-mig", "1"], 0, lambda out: out == changed.format("Enable", bus=bus)),
        (mode, 0, lambda out: out == "Enabled, Enabled\n"),
        (["mig", "-lgip", "-i", "0"], 0, lambda out: lgip_rows(out) == PROFILE_ROWS[board]),
        (["mig", "-lgipp", "-i", "0"], 0, lambda out: out == PLACEMENTS),
        (["mig", "-cgi", "19,14,9", "-C", "-i", "0"], 0, lambda out: out == created),
        (["mig", "-lgi"], 0, lambda out: rows(out) == [
            ("0", f"MIG {n[19]}", "19", "13", "6:1"), ("0", f"MIG {n[14]}", "14", "5", "4:2"),
            ("0", f"MIG {n[9]}", "9", "1", "0:4")]),
        (["mig", "-lci"], 0, lambda out: rows(out) == [
            ("0", "13", f"MIG {n[19]}", "0", "0", "0:1"), ("0", "5", f"MIG {n[14]}", "1", "0", "0:2"),
            ("0", "1", f"MIG {n[9]}", "2", "0", "0:3")]),
        (["-L"], 0, lambda out: re.fullmatch(
            rf"GPU 0: {re.escape(b['gpu'])} \(UUID: {b['uuid']}\)\n"
            rf"  MIG {re.escape(f'{n[9]:<12}')}Device  0: \(UUID: {MIG_UUID.pattern}\)\n"
            rf"  MIG {re.escape(f'{n[14]:<12}')}Device  1: \(UUID: {MIG_UUID.pattern}\)\n"
            rf"  MIG {re.escape(f'{n[19]:<12}')}Device  2: \(UUID: {MIG_UUID.pattern}\)\n"
            rf"GPU 1: .*", out, re.S) is not None and len(set(MIG_UUID.findall(out))) == 3),
        (["mig", "-cgi", "19", "-i", "0"], 23, lambda out: out == (
            "Unable to create a GPU instance on GPU  0 using profile 19: Insufficient Resources\n"
            "Failed to create GPU instances: Insufficient Resources\n")),
        (["-i", "0", "-mig", "0"], 19, lambda out: out == (
            f"Unable to disable MIG Mode for GPU {bus}: In use by another client\n"
            "Terminating early due to previous errors.\n")),
        (["mig", "-dgi", "-i", "0"], 19, lambda out: out == (
            "Unable to destroy GPU instance ID 13 from GPU  0: In use by another client\n"
            "Failed to destroy GPU instances: In use by another client\n")),
        (["mig", "-dci", "-i", "0"], 0, lambda out: out == "".join(
            f"Successfully destroyed compute instance ID  0 from GPU  0 GPU instance ID {g:2}\n" for g in (13, 5, 1))),
        (["mig", "-dgi", "-i", "0"], 0, lambda out: out == "".join(
            f"Successfully destroyed GPU instance ID {g:2} from GPU  0\n" for g in (13, 5, 1))),
        (["mig", "-lgi"], 6, lambda out: out == "No GPU instances found: Not Found\n"),
        (["-i", "0", "-mig", "0"], 0, lambda out: out == changed.format("Disable", bus=bus)),
        (mode, 0, lambda out: out == "Disabled, Disabled\n"),
        (["mig", "-lgi"], 0, lambda out: out == "No MIG-enabled devices found.\n"),
    ]


def test_nvidias_nvidia_smi_partitions_the_board(board):
    name, node = board
    for args, status, check in sequence(name):
        done = node.run(args)
        assert done.returncode == status and check(done.stdout), (args, done.returncode, done.stdout, done.stderr)


def test_ours_prints_what_nvidias_prints_at_every_step(board):
    name, node = board
    theirs = [(args, node.run(args)) for args, _, _ in sequence(name)]
    clear(node)
    for args, nvidia in theirs:
        ours = node.run_python(args)
        assert (ours.returncode, ours.stdout) == (nvidia.returncode, nvidia.stdout), (args, ours.stderr)


def test_mig_uuids_are_derived_the_same_by_every_process(board):
    name, node = board
    for run in (node.run, node.run_python):
        clear(node)
        ok(run(["-i", "0", "-mig", "1"]))
        ok(run(["mig", "-cgi", "9", "-C", "-i", "0"]))
        uuids = MIG_UUID.findall(ok(run(["-L"])))
        assert len(uuids) == 1
        if name == "h100":
            assert uuids == [H100_GI2_CI0]


def test_more_queries_print_as_nvidias(board):
    """Compute instance profiles and placements, a profile by name, placements asked for."""
    name, node = board
    n = BOARDS[name]["names"]
    steps = [["-mig", "1"], ["mig", "-cgi", f"{n[9]},{n[19]}:0", "-i", "0"], ["mig", "-lcip", "-i", "0"],
             ["mig", "-lcipp"], ["mig", "-cci", "0,1", "-gi", "2", "-i", "0"], ["mig", "-cci", "0", "-gi", "2"],
             ["mig", "-lci"], ["mig", "-dci", "-ci", "1", "-gi", "2", "-i", "0"], ["mig", "-dci", "-gi", "7"],
             ["mig", "-cgi", "9:3", "-i", "1"], ["mig", "-cgi", "bogus", "-i", "1"], ["mig", "-lgip"],
             ["mig", "-lgi", "-i", "1"], ["-L"], ["-q", "-i", "0"], [], ["mig", "-x"], ["-mig", "2"],
             ["-mig", "enabled"], ["mig", "-dci"], ["mig", "-dgi"], ["-mig", "0"], ["-r"]]
    theirs = [(args, node.run(args)) for args in steps]
    clear(node)
    for args, nvidia in theirs:
        ours = node.run_python(args)
        if args in (["-q", "-i", "0"], []):      # 580's layout: compare the MIG devices' block
            nvidia_text, ours_text = (mig_block(done.stdout, args) for done in (nvidia, ours))
            assert ours_text and ours_text == nvidia_text, args
        else:
            assert (ours.returncode, ours.stdout) == (nvidia.returncode, nvidia.stdout), (args, ours.stderr)


def mig_block(text: str, args: list) -> str:
    """The MIG devices' lines: -q's MIG Device sections, or the table's MIG devices box."""
    if args:
        start = text.index("    MIG Device\n")
        return text[start:text.index("    Accounting Mode", start)]
    lines = text[text.index("| MIG devices:"):].splitlines()
    return "\n".join(ln for ln in lines[:next(i for i, ln in enumerate(lines) if not ln.startswith(("|", "+")))])


# --- the MIG user guide's examples (A100-40GB): where the driver puts each instance ---------

#: docs.nvidia.com/datacenter/tesla/mig-user-guide, "Instance Geometry" (examples 1-3 and the
#: known issue of example 2) and "Creating GPU Instances": the -cgi list, the GPU instance ids
#: it prints, and -lgi's (profile ID, instance ID, Start:Size) rows, as the guide shows them.
#: One listing is the rule's, not the guide's: after "-cgi 9,3g.20gb" the guide's -lgi shows
#: instance 1 at 4:4 and 2 at 0:4, against its own example 2 (instance 2 at 4:4) and the ids
#: every other example shows (an id follows from its placement: mig.h).
GUIDE = [
    ("4-2-1", "19,14,5", 0, [13, 5, 1], [("19", "13", "6:1"), ("14", "5", "4:2"), ("5", "1", "0:4")]),
    ("3-2-1-1, 3g first", "9,19,14,19", 0, [2, 7, 4, 8],
     [("19", "7", "0:1"), ("19", "8", "1:1"), ("14", "4", "2:2"), ("9", "2", "4:4")]),
    ("3-2-1-1, 3g last: the known issue", "19,19,14,9", 23, [13, 11, 3], None),
    ("2-1-1-1-1-1", "14,19,19,19,19,19", 0, [5, 13, 7, 8, 9, 10],
     [("19", "7", "0:1"), ("19", "8", "1:1"), ("19", "9", "2:1"), ("19", "10", "3:1"), ("19", "13", "6:1"),
      ("14", "5", "4:2")]),
    ("two 3g", "9,3g.20gb", 0, [2, 1], [("9", "1", "0:4"), ("9", "2", "4:4")]),
    ("seven 1g", "19,19,19,19,19,19,19", 0, [13, 11, 12, 7, 8, 9, 10], None),
]


@pytest.mark.parametrize("cgi,status,ids,listed", [g[1:] for g in GUIDE], ids=[g[0] for g in GUIDE])
def test_nvidias_nvidia_smi_places_the_guides_examples_where_the_guide_shows(nodes, cgi, status, ids, listed):
    node = nodes["a100"]
    clear(node)
    try:
        ok(node.run(["-i", "0", "-mig", "1"]))
        done = node.run(["mig", "-cgi", cgi, "-i", "0"])
        assert done.returncode == status, done.stdout
        assert [int(i) for i in re.findall(r"created GPU instance ID\s+(\d+)", done.stdout)] == ids
        if listed is not None:
            assert [r[2:] for r in rows(ok(node.run(["mig", "-lgi", "-i", "0"])))] == listed
    finally:
        clear(node)
