"""``mokka exec``: run a program on a bare host as a GPU-selected container sees the node.

In a private mount namespace of its own (nothing it mounts reaches the host's):

1. /dev becomes a read-only overlayfs of the staged device nodes over the host's
   /dev, so /dev/nvidia*, /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidia-caps are
   there; what was mounted under /dev (/dev/pts, /dev/shm, ...) is bound back from
   descriptors opened before the overlay covered it. A caller whose
   NVIDIA_VISIBLE_DEVICES selects GPUs gets the other GPUs' /dev/nvidiaN whited out
   (a tmpfs of whiteouts as the top layer), so everything after sees those alone;
2. the overlay's binds of the NRI decision (the tree read-only, driver/config
   writable), here over themselves at the overlay's host path;
3. the staged proc hook in its ``HOOK OVERLAY /`` form, which mounts /proc/driver,
   /proc/modules and the /sys view (the node's PCI devices and modules) for the GPUs
   whose /dev/nvidiaN it finds: all of them, after step 1; and the HCAs' PCI functions
   when the caller's MOCK_IB is ``full`` or ``sysfs`` (``plan``), which it is given;
4. exec of the command with the decision's environment (the exit status is the
   command's own: nothing of Mokka remains in the process).

``plan`` decides, ``mounts`` makes the system calls; this module composes them.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from typing import Mapping, NoReturn, Sequence, TextIO

from mokka.core import names
from mokka.core.overlay import Overlay, host_overlay
from mokka.exec import mounts, plan

#: How its lines begin, as every Mokka command's errors do ("<command>: <error>").
PREFIX = "exec"
#: The exit statuses of a command that could not run, as a shell (and env(1)) gives them.
NOT_FOUND_STATUS = 127
NOT_EXECUTABLE_STATUS = 126
DEV = "/dev"
PROC_STATUS = "/proc/self/status"
MOUNTINFO = "/proc/self/mountinfo"


class ExecError(Exception):
    """One line a user can act on; the command prints it and exits 1."""


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def staged_gpus(overlay: Overlay) -> tuple[plan.Gpu, ...]:
    """The node's GPUs (index, UUID, minor) from the staged state's companion, which a
    workload can write (driver/config): read within bounds, never through a link."""
    from mokka.core.fsutil import ReadRefused, read_bounded
    from mokka.engine import flatstate
    path = flatstate.companion_path(overlay.profile)
    try:
        text = read_bounded(path, names.MAX_STATE_COMPANION_BYTES, follow=False)
    except (OSError, ReadRefused) as exc:
        raise ExecError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    # Only the two keys read, so each look-up scans a few lines, not the whole state.
    wanted = b"\n".join(line for line in text.splitlines() if line.startswith(b"gpu.")
                        and (b".minor_number " in line or b".uuid " in line))
    gpus = []
    for index in range(names.MAX_GPUS):
        minor = flatstate.value_of(wanted, f"gpu.{index}.minor_number")
        if minor is None or not minor.isascii() or not minor.isdigit():
            break
        gpus.append(plan.Gpu(index, flatstate.value_of(wanted, f"gpu.{index}.uuid") or "", int(minor)))
    return tuple(gpus)


def check(host_root: str, overlay_host_path: str, command: Sequence[str],
          environ: Mapping[str, str] = os.environ) -> str:
    """The overlay root to use, or ExecError saying what is missing: the command line
    first (and a MOCK_IB that is none of the tiers), then the privilege (without it the staged tree may not even be visible, and
    "not staged" would send a user the wrong way), then the staged node."""
    if not command:
        raise ExecError(plan.NO_COMMAND)
    problem = plan.ib_problem(environ)
    if problem is not None:
        raise ExecError(problem)
    if not plan.has_sys_admin(_read(PROC_STATUS)):
        raise ExecError(plan.NEEDS_ROOT)
    overlay = host_overlay(host_root, overlay_host_path)
    if not os.path.isdir(overlay.dev):
        raise ExecError(plan.NOT_STAGED.format(path=overlay.root, root=host_root))
    return overlay.root


def run(host_root: str, overlay_host_path: str, command: Sequence[str],
        environ: Mapping[str, str] = os.environ, stderr: TextIO = sys.stderr) -> NoReturn:
    """Set the namespace up and exec ``command``; returns only by raising ExecError or
    SystemExit (127/126 when the command cannot be run)."""
    overlay_root = check(host_root, overlay_host_path, command, environ)
    from mokka.nri.nodeview import NodeViewBuilder
    view = NodeViewBuilder(overlay_host_path=overlay_root, overlay_mount_path=overlay_root,
                           cdi_spec_host_path="", inotify=False).build()
    visible = None
    if names.ENV_NVIDIA_VISIBLE_DEVICES in environ:
        visible = plan.visible_gpus(environ, staged_gpus(Overlay(overlay_root)))
        if isinstance(visible, str):
            raise ExecError(visible)
    setup = plan.decide(overlay_root, environ, view, visible)
    try:
        _mount_dev(setup.dev_lower, setup.hidden_gpu_nodes)
        _bind_overlay(setup.mounts)
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EACCES):    # root, but not of the namespace's owner
            raise ExecError(plan.NEEDS_ROOT)
        raise ExecError(f"cannot mount {exc.filename}: {exc.strerror}")
    if setup.hook is None:
        print(f"{PREFIX}: {plan.NO_HOOK.format(path=Overlay(overlay_root).proc_hook)}", file=stderr)
    else:
        _run_hook(setup.hook, stderr)
    stderr.flush()
    try:
        os.execvpe(command[0], list(command), dict(setup.env))
    except FileNotFoundError:
        print(f"{PREFIX}: {command[0]}: command not found", file=stderr)
        raise SystemExit(NOT_FOUND_STATUS)
    except OSError as exc:
        print(f"{PREFIX}: {command[0]}: {exc.strerror}", file=stderr)
        raise SystemExit(NOT_EXECUTABLE_STATUS)


def _mount_dev(dev_lower: str, hidden: Sequence[str] = ()) -> None:
    """The staged nodes over /dev, less the ``hidden`` ones (whited out in a layer on
    top, from the host's /dev too), and /dev's own sub-mounts back on top."""
    mounts.private_namespace()
    # Opened inside the new namespace (a bind takes its source from the caller's own) and
    # before the overlay covers them.
    opened: list[int] = []
    try:
        submounts = []
        for point in plan.submounts(_read(MOUNTINFO), DEV):
            try:
                opened.append(mounts.open_path(point))
            except OSError:
                continue        # gone since mountinfo was read: nothing to bring back
            submounts.append((opened[-1], point))
        layers = []
        for layer in (dev_lower, DEV):
            opened.append(mounts.open_path(layer))
            layers.append(opened[-1])
        if hidden:
            # On /dev itself, under the overlay to come: no path of the host's is used.
            mounts.whiteouts(DEV, hidden)
            opened.append(mounts.open_path(DEV))
            layers.insert(0, opened[-1])
        mounts.read_only_overlay(DEV, layers)
        for fd, point in submounts:
            mounts.bind_fd(fd, point)
    finally:
        for fd in opened:
            os.close(fd)


def _bind_overlay(binds) -> None:
    """The decision's binds. Their sources are opened before the first is made, as the
    runtime resolves them on the host: the writable driver/config must not be taken
    from under the read-only bind of the tree that covers it by then."""
    sources = []
    try:
        for mount in binds:
            sources.append(mounts.open_path(mount.source))
        for fd, mount in zip(sources, binds):
            mounts.bind_fd(fd, mount.destination, mount.options)
    finally:
        for fd in sources:
            os.close(fd)


def _run_hook(hook, stderr: TextIO) -> None:
    """The proc hook fails open, as it does for a container: its own words go to stderr
    and the command runs with what it managed to mount."""
    argv = plan.hook_argv(hook)
    try:
        subprocess.run(argv, executable=hook.path, env=dict(e.split("=", 1) for e in hook.env),
                       stdin=subprocess.DEVNULL, stderr=stderr, timeout=hook.timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"{PREFIX}: the proc hook {hook.path} did not run: {exc}", file=stderr)
