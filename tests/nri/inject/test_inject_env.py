"""The env table and its precedence (facts §0)."""

from __future__ import annotations

import pytest

from mokka.core import names
from mokka.core.overlay import gpu_env, ib_env, topology_env
from mokka.nri.inject import adjust
from tests.nri.inject.builders import MOUNT, allocated, config, env_of, full_view, plain, pod

IB = names.ANNOTATION_INFINIBAND
NODE = "node-a"
TOPOLOGY = config().topology_mount_path


def test_gpu_table():
    env = env_of(adjust(config(node_name=NODE), pod(), allocated(), full_view()))
    for key, value in gpu_env(MOUNT).items() | topology_env(NODE, TOPOLOGY).items():
        assert env[key] == value
    assert env[names.ENV_IB] == names.IB_OFF
    assert names.ENV_NVML_VISIBLE_DEVICES not in env


def test_infiniband_table():
    env = env_of(adjust(config(node_name=NODE), pod(IB), plain(), full_view()))
    for key, value in ib_env(MOUNT).items():
        assert env[key] == value
    assert env[names.ENV_NVML_VISIBLE_DEVICES] == names.VISIBLE_NONE
    for key in gpu_env(MOUNT).keys() | topology_env(NODE, TOPOLOGY).keys():
        assert key not in env


def test_gpu_and_infiniband_table():
    env = env_of(adjust(config(), pod(IB), allocated(), full_view()))
    assert env[names.ENV_IB] == names.IB_FULL
    assert names.ENV_NVML_CONFIG in env and names.ENV_NVML_VISIBLE_DEVICES not in env


TOPOLOGY_CASES = [
    ("node name and staged document: topology injected", config(node_name=NODE), True, pod(), True),
    ("no node name: no topology", config(), True, pod(), False),
    ("document not staged: no topology", config(node_name=NODE), False, pod(), False),
    ("no topology mount path: no topology", config(node_name=NODE, topology_mount_path=""), True, pod(), False),
    ("infiniband only: no topology", config(node_name=NODE), True, pod(IB), False),
]


@pytest.mark.parametrize("cfg, staged, the_pod, expected", [c[1:] for c in TOPOLOGY_CASES],
                         ids=[c[0] for c in TOPOLOGY_CASES])
def test_topology_needs_node_name_and_staged_document(cfg, staged, the_pod, expected):
    container = plain() if the_pod.annotations else allocated()
    env = env_of(adjust(cfg, the_pod, container, full_view(topology_staged=staged)))
    assert (names.ENV_TOPOLOGY_CONFIG in env) is expected
    assert (names.ENV_NODE_NAME in env) is expected


PRECEDENCE_CASES = [
    # id, pod, container env, key, expected emitted value (None = not emitted)
    ("container's MOCK_NVML_CONFIG wins", pod(), ("MOCK_NVML_CONFIG=/etc/mine.yaml",),
     names.ENV_NVML_CONFIG, None),
    ("control: absent MOCK_NVML_CONFIG is set", pod(), (), names.ENV_NVML_CONFIG, gpu_env(MOUNT)[names.ENV_NVML_CONFIG]),
    ("container's empty MOCK_PCI_ROOT still wins", pod(), ("MOCK_PCI_ROOT=",), names.ENV_PCI_ROOT, None),
    ("container's NODE_NAME wins", pod(), ("NODE_NAME=other",), names.ENV_NODE_NAME, None),
    ("MOCK_IB=off forced over the container's full (GPU only)", pod(), ("MOCK_IB=full",),
     names.ENV_IB, names.IB_OFF),
    ("MOCK_IB=off already set: not emitted", pod(), ("MOCK_IB=off",), names.ENV_IB, None),
    ("container's MOCK_IB=off wins over full (IB selected)", pod(IB), ("MOCK_IB=off",), names.ENV_IB, None),
    ("container's MOCK_IB_ROOT wins", pod(IB), ("MOCK_IB_ROOT=/ib",), names.ENV_IB_ROOT, None),
    ("control: absent MOCK_IB_ROOT is set", pod(IB), (), names.ENV_IB_ROOT, ib_env(MOUNT)[names.ENV_IB_ROOT]),
    ("container's MOCK_NVML_VISIBLE_DEVICES kept when GPU selected", pod(), ("MOCK_NVML_VISIBLE_DEVICES=0",),
     names.ENV_NVML_VISIBLE_DEVICES, None),
    ("duplicate MOCK_IB: last 'full' is effective, off forced", pod(), ("MOCK_IB=off", "MOCK_IB=full"),
     names.ENV_IB, names.IB_OFF),
    ("duplicate MOCK_IB: last 'off' is effective, not emitted", pod(), ("MOCK_IB=full", "MOCK_IB=off"),
     names.ENV_IB, None),
    ("duplicate MOCK_NVML_CONFIG: container wins, not emitted", pod(),
     ("MOCK_NVML_CONFIG=/a", "MOCK_NVML_CONFIG=/b"), names.ENV_NVML_CONFIG, None),
    ("malformed entries are ignored", pod(), ("MOCK_IB", "=full", "MOCK_IBX=1"), names.ENV_IB, names.IB_OFF),
    ("value containing '=' is kept whole", pod(), ("MOCK_NVML_CONFIG=/a=b",), names.ENV_NVML_CONFIG, None),
]


@pytest.mark.parametrize("the_pod, env, key, expected", [c[1:] for c in PRECEDENCE_CASES],
                         ids=[c[0] for c in PRECEDENCE_CASES])
def test_precedence_gpu_container(the_pod, env, key, expected):
    cfg = config(node_name=NODE)
    emitted = env_of(adjust(cfg, the_pod, allocated(env=env), full_view()))
    assert emitted.get(key) == expected


FORCED_NONE_CASES = [
    ("MOCK_NVML_VISIBLE_DEVICES=none forced over 'all'", ("MOCK_NVML_VISIBLE_DEVICES=all",), names.VISIBLE_NONE),
    ("duplicate: last 'all' is effective, none forced",
     ("MOCK_NVML_VISIBLE_DEVICES=none", "MOCK_NVML_VISIBLE_DEVICES=all"), names.VISIBLE_NONE),
    ("already none: not emitted", ("MOCK_NVML_VISIBLE_DEVICES=none",), None),
    ("control: absent is set", (), names.VISIBLE_NONE),
]


@pytest.mark.parametrize("env, expected", [c[1:] for c in FORCED_NONE_CASES], ids=[c[0] for c in FORCED_NONE_CASES])
def test_infiniband_only_forces_no_visible_gpus(env, expected):
    emitted = env_of(adjust(config(), pod(IB), plain(env=env), full_view()))
    assert emitted.get(names.ENV_NVML_VISIBLE_DEVICES) == expected


def test_only_added_or_changed_keys_are_emitted():
    settled = (f"PATH={MOUNT.bin}:/usr/bin", f"LD_LIBRARY_PATH={MOUNT.lib}", "UNRELATED=1",
               *(f"{k}={v}" for k, v in gpu_env(MOUNT).items()), f"{names.ENV_IB}={names.IB_OFF}",
               "LD_PRELOAD=" + ":".join(sorted(full_view().staged_shims)))
    decision = adjust(config(), pod(), allocated(env=settled), full_view())
    assert decision.adjustment.env == ()
    assert decision.adjustment.mounts      # the overlay itself is still added


def test_env_order_is_deterministic():
    first = adjust(config(node_name=NODE), pod(IB), allocated(), full_view()).adjustment.env
    keys = [k for k, _ in first]
    assert keys[:3] == [names.ENV_PATH, names.ENV_LD_LIBRARY_PATH, names.ENV_LD_PRELOAD]
    assert len(keys) == len(set(keys))
