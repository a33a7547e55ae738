"""The composition root wires the real staging gate and node view into the pipeline."""

from __future__ import annotations

import os
import stat

import pytest

from mokka.core import names
from mokka.core.overlay import Overlay
from mokka.nri.compose import HostPaths, Settings, make_handler
from mokka.nri.inject.model import Config
from mokka.nri.plugin import PluginConfig
from mokka.nri.proto import nri_pb2
from mokka.nri.runtime_info import RuntimeInfo
from tests.netutil import free_port


def settings(tmp_path, *, agent_staged_url: str = "", staging_lock_path: str = "") -> Settings:
    host = Overlay(str(tmp_path / "overlay"))
    return Settings(Config(overlay_host_path=host.root), PluginConfig(),
                    HostPaths(devices=host.dev, topology=host.topology,
                              cdi_spec=str(tmp_path / "cdi" / names.CDI_SPEC_MOCK_FILE),
                              imex_channels=host.imex_channels),
                    health_addr="", agent_staged_url=agent_staged_url,
                    staging_lock_path=staging_lock_path)


def devices_pod():
    return (nri_pb2.PodSandbox(namespace="default", name="p",
                               annotations={names.ANNOTATION_DEVICES: "true"}),
            nri_pb2.Container(name="c"))


def stage_one_gpu(tmp_path) -> Overlay:
    """An overlay under ``tmp_path`` with /dev/nvidia0 staged (skips without mknod)."""
    host = Overlay(str(tmp_path / "overlay"))
    os.makedirs(host.dev)
    try:
        os.mknod(os.path.join(host.dev, "nvidia0"), stat.S_IFCHR | 0o666, os.makedev(195, 0))
    except PermissionError:
        pytest.skip("mknod not permitted: cannot stage a GPU node")
    return host


def test_without_a_gate_it_is_ready_and_decides_against_the_staged_tree(tmp_path):
    stage_one_gpu(tmp_path)
    handle, ready = make_handler(settings(tmp_path))
    assert ready() == (True, "staging gate not configured")
    out = nri_pb2.CreateContainerResponse.FromString(handle(*devices_pod(), RuntimeInfo()))
    assert [(d.path, d.major, d.minor) for d in out.adjust.linux.devices] == [("/dev/nvidia0", 195, 0)]
    assert [m.destination for m in out.adjust.mounts] == ["/opt/nvml-mock",
                                                          "/opt/nvml-mock/driver/config"]


def test_a_closed_gate_leaves_containers_alone_and_fails_readiness(tmp_path, caplog):
    s = settings(tmp_path, staging_lock_path=str(tmp_path / "staging.lock"),
                 agent_staged_url=f"http://127.0.0.1:{free_port()}/stagedz")
    handle, ready = make_handler(s)
    ok, reason = ready()
    assert ok is False and reason.startswith("node agent unreachable")
    with caplog.at_level("WARNING"):
        assert handle(*devices_pod(), RuntimeInfo()) == b""        # no adjustment
    assert any("left unmodified" in r.getMessage() for r in caplog.records)


def test_the_agent_restaging_is_seen_by_the_next_container(tmp_path):
    host = stage_one_gpu(tmp_path)
    handle, _ = make_handler(settings(tmp_path))

    def gpus():
        out = nri_pb2.CreateContainerResponse.FromString(handle(*devices_pod(), RuntimeInfo()))
        return [d.path for d in out.adjust.linux.devices]
    assert gpus() == gpus() == ["/dev/nvidia0"]
    os.mknod(os.path.join(host.dev, "nvidia1"), stat.S_IFCHR | 0o666, os.makedev(195, 1))
    assert gpus() == ["/dev/nvidia0", "/dev/nvidia1"]
    os.unlink(os.path.join(host.dev, "nvidia0"))
    assert gpus() == ["/dev/nvidia1"]
