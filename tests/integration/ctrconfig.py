"""The configuration a harness containerd runs with: CRI and NRI on, every path in
its scratch folder or its short socket folder, runc as the only runtime."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Iterable

from tests.integration.busybox import go_arch

if TYPE_CHECKING:
    from tests.integration.containerd import Containerd


def _toml_str(value: str) -> str:
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def _toml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(_toml_str(v) for v in values) + "]"


def config_toml(c: "Containerd") -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = {_toml_str(c.root)}
state = {_toml_str(c.state)}
plugin_dir = ""
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
imports = []

[grpc]
  address = {_toml_str(c.cri_socket)}

[ttrpc]
  address = {_toml_str(c.ttrpc_socket)}

[debug]
  address = ""
  level = {_toml_str(c.log_level)}

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = {_toml_str(c.workdir / "opt")}

  [plugins."io.containerd.nri.v1.nri"]
    disable = {str(not c.nri).lower()}
    disable_connections = false
    plugin_config_path = {_toml_str(c.nri_conf_dir)}
    plugin_path = {_toml_str(c.nri_plugin_dir)}
    plugin_registration_timeout = "5s"
    plugin_request_timeout = "2s"
    socket_path = {_toml_str(c.nri_socket)}

  [plugins."io.containerd.transfer.v1.local"]
    [[plugins."io.containerd.transfer.v1.local".unpack_config]]
      platform = {_toml_str("linux/" + go_arch())}
      snapshotter = {_toml_str(c.snapshotter)}

  [{cri}]
    sandbox_image = {_toml_str(c.image_ref)}
    restrict_oom_score_adj = true
    disable_apparmor = true
    enable_selinux = false
    enable_cdi = {str(c.enable_cdi).lower()}
    cdi_spec_dirs = {_toml_list(c.cdi_spec_dirs)}
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

    [{cri}.cni]
      bin_dir = {_toml_str(c.cni_bin_dir)}
      conf_dir = {_toml_str(c.cni_conf_dir)}

    [{cri}.containerd]
      snapshotter = {_toml_str(c.snapshotter)}
      default_runtime_name = "runc"

      [{cri}.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [{cri}.containerd.runtimes.runc.options]
          BinaryName = {_toml_str(c.paths.runc)}
          Root = {_toml_str(c.runc_root)}
          SystemdCgroup = false
"""
