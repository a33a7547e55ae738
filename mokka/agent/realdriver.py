"""Is a real NVIDIA kernel driver loaded on this node? The agent will not stage over one.

Mocking GPUs on a node with real ones would restart its containerd and bind the mock at
/run/nvidia/driver, where NVIDIA's container toolkit and GPU Operator look for the real
driver. The kernel's own evidence is looked at under the host root: the driver's procfs
version file and its entry in /sys/module. Mokka never puts either there itself: it stages
its mock proc and module trees under its overlay (driver/proc, sysview/module), and the proc
hook mounts them only inside injected containers (the agent's release namespace never is).
"""

from __future__ import annotations

import errno
import os
import stat

from mokka.core import fsutil, names
from mokka.core.overlay import under

#: The driver's procfs version file (the first line: "NVRM version: NVIDIA UNIX ...").
PROC_VERSION = "/proc/driver/nvidia/version"
#: The loaded module's sysfs directory.
SYS_MODULE = "/sys/module/nvidia"
#: The real file is about 150 bytes: a bounded read of its first line.
READ_LIMIT = 4096
#: How much of that line the refusal quotes.
QUOTE_LIMIT = 120

_ABSENT = (errno.ENOENT, errno.ENOTDIR)


def evidence(host_root: str) -> str | None:
    """What under ``host_root`` says a real driver is loaded (path and what it holds), or None."""
    version = under(host_root, PROC_VERSION)
    try:
        first = fsutil.read_bounded(version, READ_LIMIT, follow=False).split(b"\n", 1)[0]
        text = first.decode("utf-8", "replace").strip()
        if len(text) > QUOTE_LIMIT:
            text = text[:QUOTE_LIMIT] + "..."
        return f"{version} reads {text!r}" if text else f"{version} exists"
    except fsutil.ReadRefused as exc:
        return f"{version} exists ({exc})"
    except OSError as exc:
        if exc.errno not in _ABSENT:
            return f"{version} exists (unreadable: {exc.strerror or exc})"
    module = under(host_root, SYS_MODULE)
    try:
        st = os.lstat(module)
    except OSError as exc:
        if exc.errno in _ABSENT:
            return None
        return f"{module} exists (unreadable: {exc.strerror or exc})"
    kind = "the module's directory" if stat.S_ISDIR(st.st_mode) else "an entry"
    return f"{module} exists ({kind}: the nvidia module is loaded)"


def refusal(found: str) -> str:
    """The one line the agent exits with."""
    return (f"refusing to stage: this node has a real NVIDIA driver ({found}); Mokka mocks GPUs "
            "only on nodes without one: run it on other nodes (the chart: label only those "
            f"{names.NODE_OPT_IN_LABEL}=true), or pass --allow-real-driver where the driver "
            "belongs to another machine (a kind node on a GPU workstation)")
