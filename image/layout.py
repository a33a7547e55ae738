"""What the Mokka image holds and how it starts: the one home of these facts for
image/build.sh (through finish.py and oci_layout.py) and the generated image/Dockerfile.

The chart repeats MOKKA's links (``/usr/local/bin/nri-plugin``); tests/image checks
the links against the zipapp's own command table.
"""

from __future__ import annotations

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The shiv zipapp, and the names it also answers to (links beside it: it dispatches on argv[0]).
MOKKA = "/usr/local/bin/mokka"
LINKS = ("nri-plugin", "nvidia-smi", "check-fabric", "mock-ib", "fabricmanager", "ctl")
DEFAULT_COMMAND = "node-agent"
#: NVIDIA's own nvidia-smi 550 (packages.txt's extract line), staged by the agent.
NVIDIA_SMI = "/usr/lib/mokka/nvidia-smi"
#: The zipapp's site-packages, unpacked at build time: shiv would otherwise unpack into
#: ~/.shiv at first start, which a read-only root filesystem refuses.
SHIV_ROOT = "/usr/local/lib/mokka"
#: The image's Python: the zipapp's compiled wheels and pre-compiled bytecode are for it.
PYTHON_VERSION = "3.11"
NONROOT_UID = 65532
NONROOT_USER = "nonroot"
NONROOT_HOME = "/home/nonroot"
#: The image runs as root (the agent is privileged); containers that need no root
#: (the NRI plugin may) run as NONROOT_UID.
PASSWD = (f"root:x:0:0:root:/root:/bin/sh\n"
          f"{NONROOT_USER}:x:{NONROOT_UID}:{NONROOT_UID}:{NONROOT_USER}:{NONROOT_HOME}:/usr/sbin/nologin\n")
GROUP = f"root:x:0:\n{NONROOT_USER}:x:{NONROOT_UID}:\n"

ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "SHIV_ROOT": SHIV_ROOT,
    # The agent stages NVIDIA's nvidia-smi and the image's own IB tools.
    "MOKKA_AGENT_NVIDIA_SMI": NVIDIA_SMI,
    "MOKKA_AGENT_IB_TOOLS": "/",
    # systemctl in a container sees another root than PID 1's and would ignore every
    # command as "running in chroot"; with the host PID namespace it may talk to the host.
    "SYSTEMD_IGNORE_CHROOT": "1",
}

TITLE = "mokka"
REPOSITORY = "docker.io/library/mokka"
MACHINE = {"amd64": "x86_64", "arm64": "aarch64"}   # image arch -> machine (ELF, native libs)


def version(repo: str = REPO) -> str:
    """The project version: pyproject.toml's, which tags the image and the chart."""
    with open(os.path.join(repo, "pyproject.toml")) as f:
        text = f.read()
    m = re.search(r'(?m)^\[project\][^\[]*?^version\s*=\s*"([^"]+)"', text)
    if not m:
        raise ValueError(f"{repo}/pyproject.toml: no version in [project]")
    return m.group(1)


def image_ref(ver: str) -> str:
    return f"{REPOSITORY}:{ver}"


def static_labels(ver: str | None = None) -> dict[str, str]:
    return {"org.opencontainers.image.title": TITLE,
            "org.opencontainers.image.version": ver or version()}


def labels(ver: str, created: str, source: str = "", revision: str = "") -> dict[str, str]:
    out = static_labels(ver)
    out["org.opencontainers.image.created"] = created
    if source:
        out["org.opencontainers.image.source"] = source
    if revision:
        out["org.opencontainers.image.revision"] = revision
    return out


def created(epoch: int) -> str:
    """RFC 3339 in UTC, from SOURCE_DATE_EPOCH."""
    import datetime
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def image_config(arch: str, epoch: int, image_labels: dict[str, str], diff_ids: list[str]) -> dict:
    """The OCI image config (application/vnd.oci.image.config.v1+json)."""
    if arch not in MACHINE:
        raise ValueError(f"architecture {arch!r} is not one of {', '.join(MACHINE)}")
    return {
        "architecture": arch,
        "os": "linux",
        "created": created(epoch),
        "config": {
            "Entrypoint": [MOKKA],
            "Cmd": [DEFAULT_COMMAND],
            "Env": [f"{k}={v}" for k, v in ENV.items()],
            "WorkingDir": "/",
            "Labels": dict(sorted(image_labels.items())),
        },
        "rootfs": {"type": "layers", "diff_ids": list(diff_ids)},
        "history": [{"created": created(epoch), "created_by": "image/build.sh (mmdebstrap)"}],
    }
