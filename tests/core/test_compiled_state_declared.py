"""statekeys.STATE declares what compile_profile returns, field by field, and the
state companion holds no key that mokka.engine.statekeys (which the C library's
mokka_keys.h comes from) does not know."""

from __future__ import annotations

import re

import pytest

from mokka.core import compile as comp
from mokka.core import names, schema
from mokka.engine import flatstate, statekeys
from mokka.core import profile as prof

TOPOLOGY = {"version": 1, "domains": [{"name": "nvl72", "uuid": "11111111-2222-3333-4444-555555555555",
                                       "cliques": [{"id": 7, "nodes": ["worker-1"]}]}]}
#: Every optional block at once: explicit links, processes, retired pages, a failure, Grace.
SPARSE = b"""version: "1.0"
system: {driver_version: 550.163.01}
device_defaults:
  name: NVIDIA A100-SXM4-80GB
  architecture: ampere
  memory: {total_bytes: 85899345920}
  processes: [{pid: 42, name: train, type: C, used_memory_mib: 100}]
  retired_pages: {single_bit_retirement: {count: 1, addresses: [0x1000]}}
  failure: {mode: lost, lost: true}
  fabric: {state: auto, health: {route_unhealthy: "true"}}
devices:
- {index: 0, grace_cpu_pair: 1}
- {index: 1}
nvlink:
  version: 3
  device_links:
  - {index: 1, links: [{link: 0, state: active, remote_device_type: gpu, remote_index: 0}]}
"""


def _states():
    for name in names.BUILTIN_PROFILES:
        loaded = prof.load(name)
        yield name, comp.compile_profile(loaded)
        yield f"{name} in a ComputeDomain", comp.compile_profile(loaded, TOPOLOGY, "worker-1")
    yield "every optional block", comp.compile_profile(prof.parse(SPARSE))


STATES = dict(_states())


@pytest.mark.parametrize("which", STATES)
def test_the_compiled_state_is_what_statekeys_STATE_declares(which):
    assert schema.check(STATES[which], statekeys.STATE) == []


def test_a_field_compile_would_add_undeclared_is_caught():
    state = comp.compile_profile(prof.load("t4"))
    state["gpus"][0]["surprise"] = 1
    state["nvlink"] = {"version": 3, "hidden": True}
    assert schema.check(state, statekeys.STATE) == ["gpus[0].surprise", "nvlink.hidden"]


def _pattern(keys) -> re.Pattern:
    return re.compile("|".join(re.escape(statekeys.text(k, "\0")).replace("\\\0", "\0").replace("\0", r"\d+")
                               for k in keys))


@pytest.mark.parametrize("which", STATES)
def test_every_line_of_the_state_companion_is_a_declared_key(which):
    gpu_key = _pattern(statekeys.gpu_keys())
    node_key = _pattern(statekeys.node_keys())
    lines = flatstate.state_companion(STATES[which]).decode().splitlines()[3:]
    undeclared = []
    for line in lines:
        key = line.split(" ", 1)[0]
        gpu = re.fullmatch(r"gpu\.\d+\.(.+)", key)
        if not (gpu_key.fullmatch(gpu.group(1)) if gpu else node_key.fullmatch(key)):
            undeclared.append(key)
    assert len(lines) > 100 and undeclared == []


def test_keys_read_as_the_companion_spells_them():
    gpu = {statekeys.text(k) for k in statekeys.gpu_keys()}
    node = {statekeys.text(k) for k in statekeys.node_keys()}
    assert {"name", "fabric", "fabric.state", "pci.bdf", "nvlink_links.len", "nvlink_links.%u.remote_index",
            "retired_pages.single_bit_retirement.addresses.%u", "failure.lost"} <= gpu
    assert {"system.driver_version", "nvlink.version", "gpu.len", "profile_source",
            "pcie_topology.root_complexes.%u.devices.%u"} <= node
    assert "gpus" not in node and "profile" not in node and "system.driver_version" not in gpu
