"""What the plugin learns from the runtime, decided purely.

``prelaunch`` reads what a runtime that launched the plugin put in its
environment; ``from_configure`` turns a ConfigureRequest (and the ttrpc
deadline it came with) into a frozen ``RuntimeInfo``; ``event_mask`` turns the
events the plugin handles into the subscription bit mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from mokka.core import names

#: NRI event numbers (api.proto enum Event); event n is bit n-1 of the mask.
EVENT_NUMBERS = {
    "RunPodSandbox": 1, "StopPodSandbox": 2, "RemovePodSandbox": 3,
    "CreateContainer": 4, "PostCreateContainer": 5, "StartContainer": 6,
    "PostStartContainer": 7, "UpdateContainer": 8, "PostUpdateContainer": 9,
    "StopContainer": 10, "RemoveContainer": 11,
}
#: Any bit outside this makes a v0.6.1 runtime fail Configure.
VALID_EVENTS = 0x7FF


#: Set by the runtime for plugins it launches from its plugin directory.
ENV_PLUGIN_SOCKET = "NRI_PLUGIN_SOCKET"      # the inherited socket's fd ("3")
ENV_PLUGIN_NAME = "NRI_PLUGIN_NAME"
ENV_PLUGIN_IDX = "NRI_PLUGIN_IDX"


def prelaunch(environ: Mapping[str, str]) -> tuple[int, str, str] | None:
    """(fd, name, index) when all three variables are set, else None."""
    fd, name, idx = (environ.get(k) for k in (ENV_PLUGIN_SOCKET, ENV_PLUGIN_NAME, ENV_PLUGIN_IDX))
    if not (fd and name and idx) or not fd.isdigit():
        return None
    return int(fd), name, idx


def event_mask(methods) -> int:
    """Subscription mask for the handled methods. Never 0: 0 means *all* events."""
    mask = 0
    for method in methods:
        if method in EVENT_NUMBERS:
            mask |= 1 << (EVENT_NUMBERS[method] - 1)
    if mask == 0:
        raise ValueError("no NRI event handled: a mask of 0 would subscribe to all of them")
    return mask


@dataclass(frozen=True)
class RuntimeInfo:
    name: str = ""
    version: str = ""
    request_timeout_s: float = names.NRI_REQUEST_TIMEOUT_FALLBACK_S
    accepts_cdi: bool = False
    timeout_source: str = "fallback"   # "configure", "deadline" or "fallback"
    cdi_reason: str = ""               # why accepts_cdi is what it is (logged at Configure)


#: First containerd release line whose CRI applies an NRI plugin's CDI devices.
#: containerd 1.7.26-1.7.x and 2.0.x carry the field in their NRI but dropped the
#: devices silently (containerd#12650, #12651, Dec 2025); 2.2.0 resolves them.
CONTAINERD_CDI_FROM = (2, 1)


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.lstrip("v").replace("~", ".").replace("-", ".").split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def cdi_capability(runtime_name: str, runtime_version: str, newer_nri: bool) -> tuple[bool, str]:
    """Whether a CDI reference in an adjustment reaches the container, and why.

    When in doubt the answer is no: the plugin then applies the spec's edits
    itself, which works on every runtime; a reference the runtime drops would
    leave the container without its devices and nothing would say so.
    """
    if not newer_nri:
        return False, "runtime sends no NRI timeouts (NRI v0.6.1, no CDI field): applying CDI edits directly"
    if runtime_name != "containerd":
        return False, f"CDI adjustments not known to work on {runtime_name or 'this runtime'}: applying CDI edits directly"
    if _version_tuple(runtime_version)[:2] < CONTAINERD_CDI_FROM:
        return False, (f"containerd {runtime_version} drops NRI CDI devices: applying CDI edits directly")
    return True, f"containerd {runtime_version} resolves NRI CDI devices"


def from_configure(runtime_name: str, runtime_version: str, registration_timeout_ms: int,
                   request_timeout_ms: int, deadline_nano: int) -> RuntimeInfo:
    """Decide the request timeout and whether CDI adjustments reach the runtime.

    Timeout: ConfigureRequest.request_timeout when the runtime sends it (newer
    NRI), else the time left on the Configure call itself (the runtime bounds
    every call by its request timeout), else the NRI client's 2 s fallback.

    CDI: NRI v0.6.1 (containerd <= 1.7.25) has no CDI adjustment field and
    silently drops it, and it sends neither timeout field; later NRI has the
    field, but only some runtimes apply it (``cdi_capability``).
    """
    if request_timeout_ms > 0:
        timeout, source = request_timeout_ms / 1000.0, "configure"
    elif deadline_nano > 0:
        timeout, source = deadline_nano / 1e9, "deadline"
    else:
        timeout, source = names.NRI_REQUEST_TIMEOUT_FALLBACK_S, "fallback"
    newer_nri = registration_timeout_ms > 0 or request_timeout_ms > 0
    accepts, why = cdi_capability(runtime_name, runtime_version, newer_nri)
    return RuntimeInfo(name=runtime_name, version=runtime_version, request_timeout_s=timeout,
                       accepts_cdi=accepts, timeout_source=source, cdi_reason=why)


def wedge_threshold_s(info: RuntimeInfo | None) -> float:
    """/healthz fails past twice the request timeout: one whole extra timeout
    before a restart, so one slow but completing request never causes one."""
    timeout = info.request_timeout_s if info else names.NRI_REQUEST_TIMEOUT_FALLBACK_S
    return 2.0 * timeout
