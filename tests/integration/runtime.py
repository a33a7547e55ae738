"""Where the real container runtime the integration tests use lives.

The binaries and protos come from ``.ci/fetch-runtime.sh`` (Debian packages unpacked
into $MOKKA_RUNTIME_DIR or $HOME/.cache/mokka-runtime), which writes ``paths.env``.
The harness on top of it, one module per concern:

    containerd.py   Containerd(paths, workdir, ...): a real containerd in a scratch folder
    ctrconfig.py    the configuration it runs with
    leftovers.py    what a stopped containerd leaves behind: strays, mounts, cgroups
    cri.py          load_cri_api, CRIClient, cri_client: CRI over its unix socket
    pods.py         run_pod, create_container, start_container, exec_sync, container_spec, ...
    busybox.py      build_busybox_image: the one-layer OCI image the pods run
    kernel.py       overlay_supported, kernel_refusal_reason: what the kernel refuses
    cdischema.py    validate_cdi_spec: CDI's own JSON schema

Above the harness: nodes.py (nodes the real agent staged under a scratch root) and
nriplugin.py (the real plugin on a real containerd); conftest.py builds the fixtures.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

FETCH_SCRIPT = ".ci/fetch-runtime.sh"
PATH_KEYS = (
    "CONTAINERD",
    "CTR",
    "CONTAINERD_SHIM",
    "RUNC",
    "CRI_API_PROTO",
    "NRI_API_PROTO",
    "CDI_SCHEMA_DIR",
    "BUSYBOX",
)


class HarnessError(RuntimeError):
    """A failure of the harness or of the runtime that is NOT a kernel refusal."""


@dataclasses.dataclass(frozen=True)
class RuntimePaths:
    containerd: str
    ctr: str
    containerd_shim: str
    runc: str
    cri_api_proto: str
    nri_api_proto: str
    cdi_schema_dir: str
    busybox: str
    source: str  # the paths.env that was read

    @property
    def bin_dirs(self) -> list[str]:
        seen: list[str] = []
        for p in (self.containerd_shim, self.containerd, self.runc):
            d = os.path.dirname(p)
            if d not in seen:
                seen.append(d)
        return seen


def runtime_dir() -> Path:
    env = os.environ.get("MOKKA_RUNTIME_DIR")
    if env:
        return Path(env)
    return Path(os.path.expanduser("~")) / ".cache" / "mokka-runtime"


def runtime_paths() -> RuntimePaths | None:
    """Read paths.env from $MOKKA_RUNTIME_DIR or ~/.cache/mokka-runtime.

    Returns None when the file is absent or incomplete (some key missing or naming a
    path that does not exist)."""
    env_file = runtime_dir() / "paths.env"
    if not env_file.is_file():
        return None
    values: dict[str, str] = {}
    for line in env_file.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip().strip('"').strip("'")
    for key in PATH_KEYS:
        if not values.get(key) or not os.path.exists(values[key]):
            return None
    return RuntimePaths(
        containerd=values["CONTAINERD"],
        ctr=values["CTR"],
        containerd_shim=values["CONTAINERD_SHIM"],
        runc=values["RUNC"],
        cri_api_proto=values["CRI_API_PROTO"],
        nri_api_proto=values["NRI_API_PROTO"],
        cdi_schema_dir=values["CDI_SCHEMA_DIR"],
        busybox=values["BUSYBOX"],
        source=str(env_file),
    )


def fetched(what: str) -> RuntimePaths:
    """The runtime's paths; HarnessError naming ``what`` was needed if it was not fetched."""
    paths = runtime_paths()
    if paths is None:
        raise HarnessError(f"no {what}: run {FETCH_SCRIPT} first")
    return paths
