"""Where a GPU instance created without a placement goes: the library's one rule
(native/nvml/mig/mig_rules.c), which compile's boot layouts (mokka.core.mig.plan_layout) and
runtime creation (tests/native/test_mig_nvidia_smi.py: NVIDIA's nvidia-smi) both follow.

Expected starts are literals: the MIG user guide's (docs.nvidia.com/datacenter/tesla/
mig-user-guide, "Instance Geometry", A100-40GB: Start:Size as -lgi prints it), and
NVIDIA/mig-parted v0.13.1's example configs created in the order mig-parted creates them
(pkg/types/mig_config.go Flatten: more slices first; pkg/mig/config/config.go tries that
order first, then the other distinct orders).
"""

from __future__ import annotations

import functools
import itertools

import pytest

from mokka.core import mig
from mokka.core import profile as prof
from mokka.engine import migplace

INSUFFICIENT_RESOURCES = 23


@functools.lru_cache(maxsize=None)
def board(name: str) -> list[dict]:
    return prof.load(name).devices[0]["mig"]["gpu_instance_profiles"]


def create(name: str, ids: list[int]) -> tuple[list[int], int]:
    """CreateGpuInstance of each profile ID in turn on an empty GPU: (starts, NVML code)."""
    profiles = board(name)
    at = {p["id"]: n for n, p in enumerate(profiles)}
    return migplace.place(profiles, [at[i] for i in ids])


# --- the MIG user guide's examples ------------------------------------------------------

@pytest.mark.parametrize("ids,starts,code", [
    ([19, 14, 5], [6, 4, 0], 0),
    ([9, 19, 14, 19], [4, 0, 2, 1], 0),
    ([19, 19, 14, 9], [6, 4, 0], INSUFFICIENT_RESOURCES),
    ([14, 19, 19, 19, 19, 19], [4, 6, 0, 1, 2, 3], 0),
    ([9, 9], [4, 0], 0),
    ([19] * 7, [6, 4, 5, 0, 1, 2, 3], 0),
], ids=["4-2-1: 6:1 4:2 0:4", "3-2-1-1, 3g first: 4:4 0:1 2:2 1:1",
        "3-2-1-1, 3g last: the guide's known issue", "2-1-1-1-1-1: 4:2 6:1 0:1 1:1 2:1 3:1",
        "two 3g: ids 2 then 1", "seven 1g: ids 13 11 12 7 8 9 10"])
def test_the_guides_examples_place_as_the_guide_shows(ids, starts, code):
    assert create("a100", ids) == (starts, code)


def test_all_balanced_fits_only_with_the_3g_first_as_the_guide_says():
    """The issue: every one of the 12 orders failed. The guide: 3g.20gb must come first."""
    fits = {order for order in set(itertools.permutations([9, 14, 19, 19]))
            if create("h100", list(order))[1] == 0}
    assert fits == {(9, 14, 19, 19), (9, 19, 14, 19), (9, 19, 19, 14)}


# --- mig-parted's example configs, in the order it creates them -------------------------

#: (config, the profile IDs in mig-parted's first order, the starts each gets): examples/
#: config.yaml (A100-40GB names) and deployments/systemd/config-default.yaml (H100 80GB,
#: 0x233010DE), v0.13.1. IDs are those of both boards (19 1g, 20 1g+me, 15 1g 2x memory,
#: 14 2g, 9 3g, 5 4g, 0 7g).
MIG_PARTED = [
    ("all-1g", [19] * 7, [6, 4, 5, 0, 1, 2, 3]),
    ("all-1g.me", [20], [6]),
    ("all-1g 2x memory", [15] * 4, [6, 4, 0, 2]),      # no NVIDIA example shows these: the rule's
    ("all-2g", [14] * 3, [4, 0, 2]),
    ("all-3g", [9] * 2, [4, 0]),
    ("all-4g", [5], [0]),
    ("all-7g", [0], [0]),
    ("all-balanced", [9, 14, 19, 19], [4, 0, 2, 3]),
]


@pytest.mark.parametrize("name", ["a100", "h100"])
@pytest.mark.parametrize("ids,starts", [c[1:] for c in MIG_PARTED], ids=[c[0] for c in MIG_PARTED])
def test_mig_parteds_examples_apply_in_the_first_order_it_tries(name, ids, starts):
    assert create(name, ids) == (starts, 0)


@pytest.mark.parametrize("name", ["a100", "h100"])
def test_compile_boots_each_layout_as_mig_parted_would_create_it(name):
    """Compile asks the same rule (no placement of its own): the boot list of every layout
    of the profile is mig-parted's first order with the library's starts."""
    layouts = {layout["name"]: layout["gpu_instances"] for layout in
               prof.load(name).doc["device_defaults"]["mig"]["layouts"]}
    planned = {layout: [(b["profile_id"], b["placement_start"]) for b in mig.plan_layout(board(name), wanted)]
               for layout, wanted in layouts.items()}
    small = "5gb" if name == "a100" else "10gb"
    assert planned[f"all-1g.{small}"] == [(19, s) for s in (6, 4, 5, 0, 1, 2, 3)]
    assert planned["all-balanced"] == [(9, 4), (14, 0), (19, 2), (19, 3)]
    assert planned[f"all-2g.{'10gb' if name == 'a100' else '20gb'}"] == [(14, 4), (14, 0), (14, 2)]
    assert planned[f"all-3g.{'20gb' if name == 'a100' else '40gb'}"] == [(9, 4), (9, 0)]


def test_a_layout_no_order_fits_is_refused():
    with pytest.raises(mig.LayoutError, match="in any order mig-parted creates them"):
        mig.plan_layout(board("h100"), ["3g.40gb", "3g.40gb", "1g.10gb"])
