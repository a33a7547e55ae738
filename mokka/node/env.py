"""``mokka env``: the variables that aim host tools at a staged node.

No rule of its own: the variables are those the NRI decision gives a container
on the management path (every GPU of the node), with the overlay's host path as
its mount path, as ``mokka exec`` runs a command (``mokka.exec.plan.decide``).
What a container also gets from its mount namespace, a shell does not have, and
one variable stands in for it: the mock library looks for the node's
``/dev/nvidiaN`` and ``/dev/nvidia-caps`` under MOCK_NVML_DEV_ROOT, here the
staged driver root, so which GPUs and MIG devices a process sees is the node's
and never the host's own ``/dev`` (a host with NVIDIA's driver has some). A shell
runs no proc hook either, so it is decided as for a container no hook serves:
libmockfs and MOCK_PCI_ROOT show its tools (lspci) the node's whole PCI tree.

The node's own variables are set whatever the caller's environment says (an
earlier ``eval`` for another root must not win); the search lists (PATH,
LD_LIBRARY_PATH, LD_PRELOAD) keep the caller's entries behind the node's.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Mapping

from mokka.core import names
from mokka.core.overlay import Overlay

#: The caller's variables the node's entries are added to, not put in place of.
SEARCH_LISTS = (names.ENV_PATH, names.ENV_LD_LIBRARY_PATH, names.ENV_LD_PRELOAD)


def node_env(overlay_root: str, environ: Mapping[str, str], view) -> dict[str, str]:
    """Every variable to set, in the decision's order, for a caller with ``environ``
    on the node staged at ``overlay_root`` (``view``: its NodeView, as the NRI
    plugin builds it with the overlay's host path as the mount path)."""
    from mokka.exec import plan

    kept = {key: environ[key] for key in SEARCH_LISTS if key in environ}
    env = dict(plan.decide(overlay_root, kept, dataclasses.replace(view, proc_hook_staged=False)).env)
    env[names.ENV_DEV_ROOT] = Overlay(overlay_root).driver
    return env


def shell_quote(value: str) -> str:
    """``value`` in single quotes, as every POSIX shell reads it back unchanged."""
    return "'" + value.replace("'", "'\\''") + "'"


def shell_lines(env: Mapping[str, str]) -> str:
    """``export NAME='value'`` per variable, for ``eval``."""
    return "".join(f"export {key}={shell_quote(value)}\n" for key, value in env.items())


def json_text(env: Mapping[str, str]) -> str:
    return json.dumps(dict(env), indent=2) + "\n"
