"""Per-node identity (issue 37), decided where the profile is compiled: a named node's
GPUs have UUIDs, serials, board ids and an NVLink cluster UUID of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from mokka.core import compile as comp
from mokka.core.profile import ProfileError, load, parse
from tests.conftest import REPO


def compiled(base: str = "h100", edit=lambda doc: None, **kwargs) -> dict:
    doc = yaml.safe_load(load(base).text)
    edit(doc)
    return comp.compile_profile(parse(yaml.safe_dump(doc).encode(), source=f"{base}-edited"), **kwargs)


def ids(state: dict) -> list[tuple]:
    return [(g["uuid"], g.get("serial"), g["board_id"], (g.get("fabric") or {}).get("cluster_uuid"))
            for g in state["gpus"]]


def test_a_named_nodes_gpus_are_its_own():
    state = compiled(identity_node="node-a")
    gpu0 = state["gpus"][0]
    assert (gpu0["uuid"], gpu0["serial"], gpu0["board_id"]) == \
        ("GPU-460e6a87-bfb7-1c5f-8a78-cec41018939e", "1562428466266", 3007008418)
    # One NVLink domain per node: every GPU has the node's cluster UUID, the clique stays.
    assert {g["fabric"]["cluster_uuid"] for g in state["gpus"]} == {"e771ab02-bb43-3e24-ced8-7c65d18cf8bc"}
    assert {g["fabric"]["clique_id"] for g in state["gpus"]} == {0}
    other = compiled(identity_node="node-b")
    assert not {i for g in ids(state) for i in g} & {i for g in ids(other) for i in g}
    assert ids(compiled(identity_node="node-a")) == ids(state)          # the same on every restart


def test_without_a_node_name_and_with_identity_fixed_the_profile_stands():
    assert ids(compiled(node_name="w2"))[0] == \
        ("GPU-01000100-0000-0000-0000-000000000000", "1562821083900", 6656,
         "00000000-0000-0000-0000-000000000001")
    fixed = compiled(edit=lambda doc: doc["system"].update(identity="fixed"), identity_node="node-a")
    assert ids(fixed) == ids(compiled())
    per_node = compiled(edit=lambda doc: doc["system"].update(identity="per-node"), identity_node="node-a")
    assert ids(per_node) == ids(compiled(identity_node="node-a"))


def test_shared_values_stay_shared_and_a_zero_cluster_stays_zero():
    def edit(doc):
        doc["device_defaults"]["board_id"] = 0x100
        doc["device_defaults"]["fabric"]["cluster_uuid"] = "00000000-0000-0000-0000-000000000000"
        for dev in doc["devices"]:
            dev.pop("board_id", None)
            dev["serial"] = "N/A"
    state = compiled(edit=edit, identity_node="node-a")
    assert len({g["board_id"] for g in state["gpus"]}) == 1 and state["gpus"][0]["board_id"] != 0x100
    assert {g["fabric"]["cluster_uuid"] for g in state["gpus"]} == {"00000000-0000-0000-0000-000000000000"}
    assert {g["serial"] for g in state["gpus"]} == {"N/A"}
    assert len({g["uuid"] for g in state["gpus"]}) == 8


def test_a_topology_documents_cluster_uuid_wins():
    doc = {"version": 1, "domains": [{"name": "d", "uuid": "11111111-2222-3333-4444-555555555555",
                                      "cliques": [{"id": 7, "nodes": ["node-a"]}]}]}
    state = compiled(topology_doc=doc, node_name="node-a", identity_node="node-a")
    assert {(g["fabric"]["cluster_uuid"], g["fabric"]["clique_id"]) for g in state["gpus"]} == \
        {("11111111-2222-3333-4444-555555555555", 7)}
    assert state["gpus"][0]["uuid"] == "GPU-460e6a87-bfb7-1c5f-8a78-cec41018939e"


def test_an_unknown_identity_mode_is_one_line():
    with pytest.raises(ProfileError) as err:
        compiled(edit=lambda doc: doc["system"].update(identity="random"))
    assert str(err.value) == "h100-edited: system.identity: unknown identity 'random'; use one of per-node, fixed"


def test_compile_with_a_node_name_prints_what_the_agent_stages_for_it():
    done = subprocess.run([sys.executable, "-m", "mokka", "compile", "--profile", "h100", "--node-name", "node-a"],
                          capture_output=True, text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items() if k != "NODE_NAME"}, "PYTHONPATH": REPO})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["gpus"][0]["uuid"] == "GPU-460e6a87-bfb7-1c5f-8a78-cec41018939e"


def test_render_cdi_for_a_node_names_its_gpus_as_the_agent_does():
    env = {**{k: v for k, v in os.environ.items() if k != "NODE_NAME"}, "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, "-m", "mokka", "render-cdi", "--profile", "h100"],
                          capture_output=True, text=True, timeout=60, env={**env, "NODE_NAME": "node-a"})
    assert done.returncode == 0, done.stderr
    gpu_spec = next(d for d in yaml.safe_load_all(done.stdout) if d["kind"] == "nvidia.com/gpu")
    assert [d["name"] for d in gpu_spec["devices"]][:4] == \
        ["0", "GPU-460e6a87-bfb7-1c5f-8a78-cec41018939e", "1", "GPU-e27bb355-e0f7-8a19-864c-fc6f147a885d"]
