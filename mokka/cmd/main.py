"""Dispatch on the name we were called by, or on the first argument.

Imports nothing but the chosen command, so ``nvidia-smi`` and ``mokka --help``
do not pay for click, yaml, protobuf or grpc they do not use.
"""

from __future__ import annotations

import os
import sys

# name -> ("module:function", one-line summary). The module is imported only
# when its command runs.
COMMANDS: dict[str, tuple[str, str]] = {
    "node-agent": ("mokka.cmd.agent:main", "the node daemon: stage and converge the mock GPU node"),
    "nri-plugin": ("mokka.cmd.nri:main", "the NRI plugin: inject the mock driver into containers"),
    "render-cdi": ("mokka.cmd.render_cdi:main", "print or write the CDI specs for a profile"),
    "profiles": ("mokka.cmd.profiles:main", "list the built-in GPU profiles"),
    "compile": ("mokka.cmd.compile:main", "print the compiled state of a profile (JSON), or write a companion"),
    "nvidia-smi": ("mokka.smi.cli:main", "the nvidia-smi shim"),
    "check-fabric": ("mokka.cmd.check_fabric:main", "print each GPU's NVLink fabric state"),
    "mock-ib": ("mokka.cmd.mock_ib:main", "the mock InfiniBand daemon"),
    "fabricmanager": ("mokka.cmd.fabricmanager:main", "the nv-fabricmanager stand-in"),
    "ctl": ("mokka.cmd.ctl:main", "change a running node's GPU readings (runtime overrides)"),
    "profile": ("mokka.cmd.profile:main", "profile capture: a real node's nvidia-smi -q -x as a profile"),
    "exec": ("mokka.cmd.exec:main", "run a command as a GPU container sees the node (root)"),
    "env": ("mokka.cmd.env:main", "print the shell lines that aim host tools at a staged node"),
    "status": ("mokka.cmd.status:main", "a staged node at a glance: profile, GPUs, MIG, overrides, daemons"),
    "kwok-nodes": ("mokka.cmd.kwok_nodes:main", "print KWOK Node objects labelled as GPU nodes of a profile"),
}
ALIASES = {"nv-fabricmanager": "fabricmanager", "nvml-mock-ctl": "ctl", "nri": "nri-plugin", "agent": "node-agent"}
PROGRAM = "mokka"


def usage() -> str:
    width = max(len(n) for n in COMMANDS)
    lines = [f"Usage: {PROGRAM} COMMAND [ARGS]...", "",
             "Mock NVIDIA GPUs, NVLink, InfiniBand and IMEX on a CPU-only node.",
             "Also runs as any command name below when invoked through a link of that name.",
             "", "Commands:"]
    for name, (_, summary) in COMMANDS.items():
        lines.append(f"  {name:<{width}}  {summary}")
    lines += ["", f"Run '{PROGRAM} COMMAND --help' for a command's options."]
    return "\n".join(lines)


def prelaunched_plugin(invoked: str, environ=os.environ) -> bool:
    """containerd runs every ``NN-name`` in its NRI plugin directory itself, with
    the socket as fd 3 and NRI_PLUGIN_SOCKET set: a link named so is the plugin."""
    return (len(invoked) > 3 and invoked[:2].isdigit() and invoked[2] == "-"
            and "NRI_PLUGIN_SOCKET" in environ)


def resolve(argv: list[str]) -> tuple[str | None, list[str]]:
    """(command name or None, its arguments) for an argv."""
    invoked = os.path.basename(argv[0]) if argv else PROGRAM
    invoked = ALIASES.get(invoked, invoked)
    if invoked in COMMANDS:
        return invoked, argv[1:]
    if prelaunched_plugin(invoked):
        return "nri-plugin", argv[1:]
    if len(argv) > 1:
        name = ALIASES.get(argv[1], argv[1])
        return name, argv[2:]
    return None, []


def run(name: str, args: list[str]) -> int:
    target, _ = COMMANDS[name]
    module_name, func_name = target.split(":")
    try:
        module = __import__(module_name, fromlist=[func_name])
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        print(f"{PROGRAM}: '{name}' is not built yet in this version of Mokka", file=sys.stderr)
        return 2
    return getattr(module, func_name)(args, prog_name=name) or 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    name, args = resolve(argv)
    if name is None:                      # no command given: usage on stderr, like click
        print(usage(), file=sys.stderr)
        return 2
    if name in ("-h", "--help", "help"):
        print(usage())
        return 0
    if name in ("--version", "version"):
        from mokka import __version__
        print(f"{PROGRAM} {__version__}")
        return 0
    if name not in COMMANDS:
        print(f"{PROGRAM}: unknown command {name!r}; run '{PROGRAM} --help' for the list",
              file=sys.stderr)
        return 2
    return run(name, args)


if __name__ == "__main__":
    raise SystemExit(main())
