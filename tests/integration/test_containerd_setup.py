"""The containerd half of cri against the REAL containerd 1.7.24 (config version 2).

The "host" is a scratch folder: its config.toml is the harness's own (NRI off,
CDI off) plus a comment and a registry mirror, and the setup writes Mokka's
file beside it exactly as the agent does (ContainerdSetup, the code Apply runs,
with host root / and every path inside the scratch folder). containerd itself
then says what it makes of the result: ``containerd config dump``, and a
started containerd that opens NRI at Mokka's socket, registers the real
``mokka nri-plugin`` and resolves the published CDI spec.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

from mokka.agent.containerd.config import Settings
from mokka.agent.containerd.restart import Restarter
from mokka.agent.containerd.setup import ContainerdSetup
from mokka.agent.containerd.toolkit import Toolkit
from mokka.agent.hostfs import HostFS
from mokka.agent.manifest import Manifest
from mokka.core import log as mlog
from mokka.core import names
from tests.integration.busybox import IMAGE_REF
from tests.integration.containerd import Containerd
from tests.integration.nriplugin import PluginProcess, registrations
from tests.integration.pods import container_spec, create_container, run_pod
from tests.waiting import wait_until

CRI, NRI = names.CONTAINERD_CRI_PLUGIN_V2, names.CONTAINERD_NRI_PLUGIN
COMMENT = "# The host's own note: Mokka must keep it.\n"
MIRROR = f"""
    [plugins."{CRI}".registry.mirrors."mirror.example"]
      endpoint = ["https://mirror.example"] # the host's mirror
"""
#: What Mokka changes in containerd's view; everything else must dump unchanged.
OURS = {("imports",), ("plugins", CRI, "enable_cdi"), ("plugins", CRI, "cdi_spec_dirs"),
        ("plugins", NRI, "disable"), ("plugins", NRI, "socket_path")}


def host_config(instance: Containerd) -> str:
    return COMMENT + instance.config_text() + MIRROR


def make_setup(instance: Containerd, runtime, spec_dir: str, nri_socket: str,
               which=lambda _: None, runner=None):
    folder = instance.workdir
    settings = Settings(config=str(instance.config_path), config_dir=str(folder / "conf.d"),
                        cdi_spec_dir=spec_dir, nri_socket=nri_socket)
    log = mlog.get("mokka.test.containerd")
    fs = HostFS(Manifest(str(folder / "manifest.json"), log), log)
    toolkit = Toolkit("/", log, which=which, **({"runner": runner} if runner else {}))
    toolkit.root = str(folder / "toolkit-root")      # installs there, not in the real /usr
    return ContainerdSetup("/", settings, fs, log, Restarter(names.RESTART_MODE_NONE, log),
                           toolkit,
                           path_dirs=(os.path.dirname(runtime.containerd),)), settings


def dump(runtime, config) -> str:
    done = subprocess.run([runtime.containerd, "--config", str(config), "config", "dump"],
                          capture_output=True, text=True, check=True)
    return done.stdout


def without(doc: dict, paths) -> dict:
    doc = {k: (dict(v) if isinstance(v, dict) else v) for k, v in doc.items()}
    doc["plugins"] = {k: dict(v) for k, v in doc["plugins"].items()}
    for path in paths:
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        parent.pop(path[-1], None)
    return doc


def test_dump_has_cdi_and_nri_on_every_host_setting_unchanged_and_revoke_restores_it(
        runtime, tmp_path):
    instance = Containerd(runtime, tmp_path / "host", nri=False, start=False)
    try:
        original = host_config(instance)
        instance.config_path.write_text(original)
        before = dump(runtime, instance.config_path)
        setup, settings = make_setup(instance, runtime, "/var/run/mokka-cdi", "/run/mokka-nri.sock")

        setup.apply()

        edited = instance.config_path.read_text()
        assert edited.startswith(COMMENT) and "# the host's mirror" in edited
        after = tomllib.loads(dump(runtime, instance.config_path))
        old = tomllib.loads(before)
        assert old["plugins"][CRI]["enable_cdi"] is False     # the host had both off
        assert old["plugins"][NRI]["disable"] is True
        assert after["plugins"][CRI]["enable_cdi"] is True
        assert after["plugins"][CRI]["cdi_spec_dirs"] == [str(instance.workdir / "cdi"),
                                                          "/var/run/mokka-cdi"]
        assert after["plugins"][NRI]["disable"] is False
        assert after["plugins"][NRI]["socket_path"] == "/run/mokka-nri.sock"
        assert after["plugins"][CRI]["sandbox_image"] == IMAGE_REF
        assert after["plugins"][CRI]["registry"]["mirrors"]["mirror.example"]["endpoint"] == \
            ["https://mirror.example"]
        assert without(after, OURS) == without(old, OURS)

        setup.revoke()

        assert instance.config_path.read_text() == original
        assert not os.path.exists(settings.drop_in)
        assert dump(runtime, instance.config_path) == before
    finally:
        instance.stop()


def test_containerd_started_with_the_setup_runs_nri_and_cdi(containerd_factory, runtime, node):
    root, overlay = node
    spec_dir = os.path.join(root, names.CDI_SPEC_DIR.lstrip("/"))
    instance = containerd_factory(nri=False, start=False)
    instance.config_path.write_text(host_config(instance))
    nri_socket = str(instance.sockdir / "mokka" / "nri.sock")
    setup, _ = make_setup(instance, runtime, spec_dir, nri_socket)
    setup.apply()

    instance.start()
    wait_until(lambda: os.path.exists(nri_socket),
               lambda: f"containerd's NRI socket; log:\n{instance.log_text()[-3000:]}", timeout=10)
    plugin = PluginProcess("", nri_socket, overlay, root)
    plugin.argv[:1] = [sys.executable, "-m", "mokka"]
    plugin.start()
    try:
        wait_until(lambda: registrations(instance) == 1,
                   "containerd to log the plugin's registration", timeout=10)
        cri = instance.client()
        pod_id, pod_config = run_pod(cri, "setup", "default")
        cid = create_container(cri, pod_id, pod_config, "app", None,
                                  cdi_devices=[names.CDI_MOCK_DEVICE_ALL])
        spec = container_spec(cri, cid)
        paths = {d["path"] for d in (spec.get("linux") or {}).get("devices") or []}
        assert {f"/dev/nvidia{i}" for i in range(4)} <= paths
    finally:
        plugin.stop()


def test_a_version_1_host_config_keeps_its_cri_settings(runtime, tmp_path):
    """containerd 1.7 still reads version 1 (plugins under short names): copied across."""
    instance = Containerd(runtime, tmp_path / "host", start=False)
    try:
        original = COMMENT + '[plugins.cri]\n  sandbox_image = "registry.example/pause:1"\n'
        instance.config_path.write_text(original)
        setup, _ = make_setup(instance, runtime, "/var/run/mokka-cdi", "/run/mokka-nri.sock")
        setup.apply()
        after = tomllib.loads(dump(runtime, instance.config_path))
        assert after["plugins"][CRI]["sandbox_image"] == "registry.example/pause:1"
        assert after["plugins"][CRI]["enable_cdi"] is True
        assert after["plugins"][NRI]["disable"] is False
        setup.revoke()
        assert instance.config_path.read_text() == original
    finally:
        instance.stop()


HANDLER = f"""version = 2
[plugins."{CRI}".containerd]
  default_runtime_name = "nvidia"
  [plugins."{CRI}".containerd.runtimes.nvidia]
    runtime_type = "io.containerd.runc.v2"
    [plugins."{CRI}".containerd.runtimes.nvidia.options]
      BinaryName = "/usr/bin/nvidia-container-runtime"
"""


def test_the_toolkit_handler_from_a_stand_in_nvidia_ctk_is_what_containerd_reads(runtime, tmp_path):
    release = tmp_path / "release"
    release.mkdir()
    for binary in names.TOOLKIT_BINARIES:
        (release / binary).write_text("#!/bin/sh\nexit 0\n")
        (release / binary).chmod(0o755)

    def nvidia_ctk(argv):                # writes the handler table, as nvidia-ctk does
        out = next(a.split("=", 1)[1] for a in argv if a.startswith("--drop-in-config="))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(HANDLER)
        return 0, ""

    instance = Containerd(runtime, tmp_path / "host", nri=False, start=False)
    try:
        instance.config_path.write_text(host_config(instance))
        setup, _ = make_setup(instance, runtime, "/var/run/mokka-cdi", "/run/mokka-nri.sock",
                              which=lambda name: str(release / name), runner=nvidia_ctk)
        setup.apply()
        cri = tomllib.loads(dump(runtime, instance.config_path))["plugins"][CRI]
        assert cri["containerd"]["default_runtime_name"] == "nvidia"
        assert cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == \
            "/usr/bin/nvidia-container-runtime"
        assert cri["enable_cdi"] is True
    finally:
        instance.stop()
