"""``nri-plugin``: flags and environment -> Settings -> ``mokka.nri.compose.serve``.

Every flag reads an environment variable (the flag wins). Defaults come from
``mokka.core.names``; the three ``<overlay-...>`` paths derive from whatever the
overlay flags ended up being. The plugin itself (``mokka.nri``) is imported
only when the command runs, so ``--help`` loads no protobuf.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from mokka.cmd import common, printconfig
from mokka.core import names
from mokka.core.overlay import Overlay

if TYPE_CHECKING:
    from mokka.nri.compose import Settings

COMMAND = "nri-plugin"


class EmptyEnvOption(click.Option):
    """An option whose environment variable counts even when set to "".

    click ignores empty variables, but for these flags empty is a value:
    "" disables the probes, excludes no namespace, preloads no shim.
    """

    def resolve_envvar_value(self, ctx):
        if isinstance(self.envvar, str) and self.envvar in os.environ:
            return os.environ[self.envvar]
        return super().resolve_envvar_value(ctx)


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(item.strip() for item in (value or "").split(",") if item.strip())


def build_settings(opts: dict, gates: dict[str, bool]) -> "Settings":
    """Validate and assemble; raises common.CommandError on a bad combination."""
    from mokka.core import probes
    from mokka.nri.compose import HostPaths, Settings
    from mokka.nri.inject.model import Config
    from mokka.nri.plugin import PluginConfig, from_environment

    if bool(opts["agent_staged_url"]) != bool(opts["staging_lock_path"]):
        raise common.UsageError("--agent-staged-url and --staging-lock-path must be set together")
    index = opts["plugin_index"]
    if not (len(index) == 2 and index.isascii() and index.isdigit()):
        raise common.CommandError(f"invalid --plugin-index {index!r}: use two digits, 00 to 99")
    if not opts["plugin_name"]:
        raise common.CommandError("--plugin-name must not be empty")
    try:
        probes.parse_addr(opts["health_addr"])
    except ValueError as exc:
        raise common.CommandError(str(exc)) from None

    host, mount = Overlay(opts["overlay_host_path"]), Overlay(opts["overlay_mount_path"])
    config = Config(
        excluded_namespaces=frozenset(_csv(opts["excluded_namespaces"])),
        opt_out_annotation=opts["opt_out_annotation"],
        device_annotation=opts["device_annotation"],
        infiniband_annotation=opts["infiniband_annotation"],
        infiniband_tier=opts["infiniband_tier"],
        imex_channel_annotation=opts["imex_channel_annotation"],
        overlay_host_path=host.root,
        overlay_mount_path=mount.root,
        ld_preload_shims=_csv(opts["ld_preload_shims"]),
        node_name=opts["node_name"],
        topology_mount_path=opts["topology_mount_path"] or mount.topology,
        device_injection_mode=opts["device_injection_mode"],
        cdi_device_name=opts["cdi_device_name"],
        toolkit_cdi_annotations=gates.get(names.GATE_TOOLKIT_CDI_ANNOTATIONS, False),
        cdi_annotation_namespaces=frozenset(_csv(opts["cdi_annotation_namespaces"])),
    )
    paths = HostPaths(
        devices=opts["device_host_path"] or host.dev,
        topology=opts["topology_host_path"] or host.topology,
        cdi_spec=opts["cdi_spec_host_path"],
        imex_channels=opts["imex_channel_host_path"] or host.imex_channels)
    plugin = from_environment(PluginConfig(socket_path=opts["socket_path"],
                                           name=opts["plugin_name"], index=index))
    return Settings(config, plugin, paths, opts["health_addr"],
                    opts["agent_staged_url"], opts["staging_lock_path"])


def _opt(flag: str, envvar: str, default, help: str, empty_counts: bool = False, type=None):
    return click.option(flag, envvar=envvar, default=default, show_default=True, show_envvar=True,
                        help=help, type=type, cls=EmptyEnvOption if empty_counts else click.Option)


OPTIONS = [
    _opt("--health-addr", "MOKKA_NRI_HEALTH_ADDR", names.NRI_HEALTH_ADDR,
         "Address for /healthz, /readyz and /metrics; empty disables them.", empty_counts=True),
    _opt("--agent-staged-url", "MOKKA_NRI_AGENT_STAGED_URL", "",
         "Node agent's /stagedz URL; set together with --staging-lock-path."),
    _opt("--staging-lock-path", "MOKKA_NRI_STAGING_LOCK_PATH", "",
         "Node agent's staging lock; set together with --agent-staged-url."),
    _opt("--socket-path", "MOKKA_NRI_SOCKET_PATH", names.NRI_SOCKET_PATH, "NRI socket path."),
    _opt("--plugin-name", "MOKKA_NRI_PLUGIN_NAME", names.NRI_PLUGIN_NAME,
         "Name this plugin registers with the runtime under."),
    _opt("--plugin-index", "MOKKA_NRI_PLUGIN_INDEX", names.NRI_PLUGIN_INDEX,
         "Order against other plugins (two digits)."),
    _opt("--excluded-namespaces", "MOKKA_NRI_EXCLUDED_NAMESPACES",
         ",".join(names.NRI_EXCLUDED_NAMESPACES),
         "Comma-separated namespaces to skip; empty excludes nothing.", empty_counts=True),
    _opt("--opt-out-annotation", "MOKKA_NRI_OPT_OUT_ANNOTATION", names.ANNOTATION_OPT_OUT,
         "Pod annotation key; value false disables injection."),
    _opt("--overlay-host-path", "MOKKA_NRI_OVERLAY_HOST_PATH", names.OVERLAY_HOST_PATH,
         "Host path for the overlay."),
    _opt("--overlay-mount-path", "MOKKA_NRI_OVERLAY_MOUNT_PATH", names.OVERLAY_MOUNT_PATH,
         "Container path for the overlay."),
    _opt("--ld-preload-shims", "MOKKA_NRI_LD_PRELOAD_SHIMS", ",".join(names.LD_PRELOAD_SHIMS),
         "Comma-separated shim paths, relative to the overlay mount or absolute.",
         empty_counts=True),
    _opt("--node-name", "NODE_NAME", "", "Enables ComputeDomain topology injection."),
    _opt("--topology-host-path", "MOKKA_NRI_TOPOLOGY_HOST_PATH", "",
         f"[default: <overlay-host-path>/{names.TOPOLOGY_DOC}]"),
    _opt("--topology-mount-path", "MOKKA_NRI_TOPOLOGY_MOUNT_PATH", "",
         f"[default: <overlay-mount-path>/{names.TOPOLOGY_DOC}]"),
    _opt("--device-annotation", "MOKKA_NRI_DEVICE_ANNOTATION", names.ANNOTATION_DEVICES,
         "Pod annotation key; value true adds /dev/nvidia* nodes."),
    _opt("--device-host-path", "MOKKA_NRI_DEVICE_HOST_PATH", "",
         f"[default: <overlay-host-path>/{names.DEV_DIR}]"),
    _opt("--device-injection-mode", "MOKKA_NRI_DEVICE_INJECTION_MODE", "raw",
         "raw (device nodes) or cdi (CDI reference).",
         type=click.Choice(names.DEVICE_INJECTION_MODES)),
    _opt("--cdi-device-name", "MOKKA_NRI_CDI_DEVICE_NAME", names.CDI_MOCK_DEVICE_ALL,
         "Fully qualified CDI device injected in cdi mode."),
    _opt("--cdi-spec-host-path", "MOKKA_NRI_CDI_SPEC_HOST_PATH",
         os.path.join(names.CDI_SPEC_DIR, names.CDI_SPEC_MOCK_FILE),
         "Spec checked before a CDI reference is emitted."),
    _opt("--infiniband-annotation", "MOKKA_NRI_INFINIBAND_ANNOTATION", names.ANNOTATION_INFINIBAND,
         "Pod annotation key; value true enables the mock InfiniBand tools."),
    _opt("--infiniband-tier", "MOKKA_NRI_INFINIBAND_TIER", names.IB_FULL,
         "What those containers get: full (sysfs, umad and verbs) or sysfs (paths only).",
         type=click.Choice(names.IB_TIERS)),
    _opt("--imex-channel-annotation", "MOKKA_NRI_IMEX_CHANNEL_ANNOTATION",
         names.ANNOTATION_IMEX_CHANNELS, "Pod annotation key; value true adds IMEX channels."),
    _opt("--imex-channel-host-path", "MOKKA_NRI_IMEX_CHANNEL_HOST_PATH", "",
         f"[default: <overlay-host-path>/{names.IMEX_CHANNEL_DIR}]"),
    _opt("--cdi-annotation-namespaces", "MOKKA_NRI_CDI_ANNOTATION_NAMESPACES", "",
         "Comma-separated namespaces allowed the toolkit's CDI annotations.", empty_counts=True),
]


def _with_options(fn):
    for option in reversed(OPTIONS):
        fn = option(fn)
    return fn


@click.command(name=COMMAND, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=common.example("mokka nri-plugin --device-injection-mode cdi --print-config"))
@_with_options
@printconfig.option("MOKKA_NRI_PRINT_CONFIG")
@common.common_options
def command(gates: dict[str, bool], print_config: bool, **opts) -> int:
    """Inject the mock driver into containers as containerd creates them."""
    settings = build_settings(opts, gates)
    if print_config:
        printconfig.emit(COMMAND, printconfig.plain(settings), gates)
        return 0
    from mokka.nri.compose import serve
    code = serve(settings)
    if isinstance(code, str):
        raise common.CommandError(code)
    return code


def main(args: list[str], prog_name: str = COMMAND) -> int:
    return common.run_click(command, args, common.program(prog_name))
