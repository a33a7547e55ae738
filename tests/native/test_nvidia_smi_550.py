"""NVIDIA's own nvidia-smi 550, staged by the agent over the mock NVML library,
for every built-in profile: it runs cleanly and agrees with our Python
nvidia-smi (580 layout) on every value both print, and with the compiled state.

No MOCK_NVML_CONFIG is set for NVIDIA's binary: the library finds the node's
profile from its own place in the overlay, and the binary finds the library
through its RUNPATH.
"""

from __future__ import annotations


import pytest

from tests import compiled
from tests.native.smi_compare import NA, blackwell_unknown, gpu_matrix, parse_q, xml_leaves
from tests.native.staged import nvml_build, staged_node  # noqa: F401 (fixtures)

PROFILES = ["a100", "b200", "gb200", "gb300", "h100", "l40s", "t4"]

QUERY = ("index,uuid,name,serial,pci.bus_id,driver_version,vbios_version,memory.total,"
         "memory.used,memory.free,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.max.sm,"
         "utilization.gpu,utilization.memory,pstate,compute_mode,persistence_mode,"
         "ecc.mode.current,mig.mode.current,compute_cap,fan.speed,display_active")


@pytest.fixture(scope="module", params=PROFILES)
def node(request, staged_node):
    return staged_node(request.param)


def state_of(node) -> dict:
    return compiled.state_of(node.config)


def ok(result, code=0):
    assert result.returncode == code, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    return result.stdout


def test_list_matches_python_and_the_state(node):
    ours, theirs = ok(node.run_python(["-L"])), ok(node.run(["-L"]))
    assert theirs == ours
    gpus = state_of(node)["gpus"]
    assert theirs.splitlines() == [f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})" for g in gpus]


def test_query_gpu_values_agree_cell_by_cell(node):
    args = [f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"]
    ours = [r.split(", ") for r in ok(node.run_python(args)).splitlines()]
    theirs = [r.split(", ") for r in ok(node.run(args)).splitlines()]
    assert len(theirs) == len(ours) == len(state_of(node)["gpus"])
    fields = QUERY.split(",")
    mismatches = []
    for row_ours, row_theirs in zip(ours, theirs):
        assert len(row_theirs) == len(fields), row_theirs
        for field, a, b in zip(fields, row_ours, row_theirs):
            if a.strip() != b.strip():
                mismatches.append(f"{row_ours[0]}:{field}: python {a!r} nvidia {b!r}")
    assert not mismatches, "\n".join(mismatches)


def test_default_table_has_no_error_cells(node):
    out = ok(node.run([]))
    for bad in ("ERR!", "Internal error", "Unknown Error", "Function Not Found"):
        assert bad not in out
    assert "No running processes found" in out
    for gpu in state_of(node)["gpus"]:
        assert gpu["pci"]["bus_id"][4:] in out          # 00000000:1A:00.0 prints as 0000:1A:00.0


# Rows whose meaning differs between the 550 and 580 layouts, or that NVIDIA's
# binary takes from the machine it runs on rather than from NVML.
Q_LAYOUT = {"Display Mode", "Timestamp"}


def test_query_text_agrees_on_every_value_both_print(node):
    theirs_text = ok(node.run(["-q"]))
    assert "Uninitialized" not in theirs_text and "Unknown Error" not in theirs_text
    ours, theirs = parse_q(ok(node.run_python(["-q"]))), parse_q(theirs_text)
    common = [k for k in theirs if k in ours and k[-1] not in Q_LAYOUT
              and theirs[k] not in NA and ours[k] not in NA
              and not (k[-1] == "Product Architecture" and blackwell_unknown(ours[k], theirs[k]))]
    assert len(common) >= 40 * len(state_of(node)["gpus"]), len(common)
    mismatches = [f"{k}: python {ours[k]!r} nvidia {theirs[k]!r}" for k in common if ours[k] != theirs[k]]
    assert not mismatches, "\n".join(mismatches)


def test_xml_is_valid_and_agrees_on_every_value_both_print(node):
    text = ok(node.run(["-q", "-x"]))
    assert text.startswith('<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">')
    theirs, ours = xml_leaves(text), xml_leaves(ok(node.run_python(["-q", "-x"])))
    assert {k[0] for k in theirs} == {g["pci"]["bus_id"] for g in state_of(node)["gpus"]}
    common = [k for k in theirs if k in ours and theirs[k] not in NA and ours[k] not in NA
              and k[-1] not in {"timestamp", "display_mode"}
              and not (k[-1] == "product_architecture" and blackwell_unknown(ours[k], theirs[k]))]
    assert len(common) >= 40 * len(state_of(node)["gpus"]), len(common)
    mismatches = [f"{k}: python {ours[k]!r} nvidia {theirs[k]!r}" for k in common if ours[k] != theirs[k]]
    assert not mismatches, "\n".join(mismatches)


def test_topo_matrix_matches_python(node):
    theirs = gpu_matrix(ok(node.run(["topo", "-m"])))
    assert theirs == gpu_matrix(ok(node.run_python(["topo", "-m"])))
    assert len(theirs) == len(state_of(node)["gpus"])


def test_nvlink_status_matches_python(node):
    theirs = ok(node.run(["nvlink", "-s"]))
    assert theirs == ok(node.run_python(["nvlink", "-s"]))
    links = sum(len(g.get("nvlink_links") or []) for g in state_of(node)["gpus"])
    assert theirs.count(" Link ") == links


def test_no_visible_gpu_lists_nothing_and_exits_0(staged_node):
    node = staged_node("t4")
    for run in (node.run, node.run_python):
        result = run(["-L"], MOCK_NVML_VISIBLE_DEVICES="none")
        assert (result.returncode, result.stdout.strip()) == (0, "No devices found."), result
