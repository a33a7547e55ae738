"""What a stopped containerd of the harness may leave behind, and its removal:
processes in its cgroups and its shims, mounts under its folders, its cgroups."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.integration.kernel import detach
from tests.waiting import WaitTimedOut, wait_until

CGROUP_ROOT = Path("/sys/fs/cgroup")


def cgroup_dirs(cgroup_parent: str) -> list[Path]:
    """The directories of ``cgroup_parent`` (cgroup v2, and each v1 controller)."""
    rel = cgroup_parent.strip("/")
    found = []
    if (CGROUP_ROOT / rel).is_dir():
        found.append(CGROUP_ROOT / rel)
    if CGROUP_ROOT.is_dir():
        for ctl in CGROUP_ROOT.iterdir():
            if (ctl / rel).is_dir():
                found.append(ctl / rel)
    return found


def kill_strays(cgroup_parent: str, cri_socket: str) -> None:
    """SIGKILL what is still in the cgroups (containers), then the shims serving
    ``cri_socket``, and wait (bounded) until they are gone."""
    pids: set[int] = set()
    for d in cgroup_dirs(cgroup_parent):
        for procs in d.rglob("cgroup.procs"):
            try:
                pids.update(int(p) for p in procs.read_text().split())
            except OSError:
                pass
    needle = cri_socket.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"containerd-shim" in cmdline and needle in cmdline:
            pids.add(int(entry.name))
    pids.discard(os.getpid())
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if pids:
        try:
            wait_until(lambda: all(not os.path.exists(f"/proc/{p}") or _is_zombie(p) for p in pids),
                       f"stray processes {sorted(pids)} to exit", timeout=5)
        except WaitTimedOut:
            pass          # best effort: the next run's folders are new


def unmount_under(*folders: str | os.PathLike) -> None:
    """Detach every mount below any of ``folders``, deepest first."""
    prefixes = tuple(str(f) + "/" for f in folders)
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return
    targets = []
    for line in lines:
        fields = line.split()
        if len(fields) > 4:
            target = fields[4].encode().decode("unicode_escape")
            if target.startswith(prefixes):
                targets.append(target)
    for target in sorted(targets, key=len, reverse=True):
        detach(target)


def remove_cgroups(cgroup_parent: str) -> None:
    for d in cgroup_dirs(cgroup_parent):
        for sub in sorted((p for p in d.rglob("*") if p.is_dir()), key=lambda p: len(str(p)), reverse=True):
            try:
                sub.rmdir()
            except OSError:
                pass
        try:
            d.rmdir()
        except OSError:
            pass


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"
