"""Pods and containers through CRI, the way the kubelet asks for them."""

from __future__ import annotations

import dataclasses
import json
import os
import uuid
from pathlib import Path
from typing import Any, Mapping, Sequence

from tests.integration.busybox import IMAGE_REF
from tests.integration.cri import CRIClient
from tests.waiting import wait_until


def _kv_list(pb, values: Mapping[str, str] | Sequence[tuple[str, str]] | None):
    if not values:
        return []
    items = values.items() if isinstance(values, Mapping) else values
    return [pb.KeyValue(key=str(k), value=str(v)) for k, v in items]


def run_pod(
    client: CRIClient,
    name: str,
    namespace: str = "default",
    annotations: Mapping[str, str] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    uid: str | None = None,
    privileged: bool = False,
    cgroup_parent: str | None = None,
    log_directory: str | os.PathLike | None = None,
    timeout: float = 60.0,
):
    """Run a host-network pod sandbox (network NODE, hostname "", own log directory,
    own cgroup parent). Returns ``(pod_id, pod_config)``; pass pod_config to
    create_container."""
    pb = client.pb
    uid = uid or uuid.uuid4().hex
    if log_directory is None:
        log_directory = Path(client.workdir) / "pods" / f"{namespace}_{name}_{uid}"
    Path(log_directory).mkdir(parents=True, exist_ok=True)
    config = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace=namespace, attempt=0),
        hostname="",
        log_directory=str(log_directory),
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        linux=pb.LinuxPodSandboxConfig(
            cgroup_parent=cgroup_parent or client.cgroup_parent,
            security_context=pb.LinuxSandboxSecurityContext(
                namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD),
                privileged=privileged,
            ),
        ),
    )
    resp = client.call("RunPodSandbox", config=config, runtime_handler="", timeout=timeout)
    return resp.pod_sandbox_id, config


def create_container(
    client: CRIClient,
    pod_id: str,
    pod_config,
    name: str,
    command: Sequence[str] | None,
    annotations: Mapping[str, str] | None = None,
    devices: Sequence[Mapping[str, str] | tuple] | None = None,
    envs: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    privileged: bool = False,
    *,
    args: Sequence[str] | None = None,
    image: str = IMAGE_REF,
    labels: Mapping[str, str] | None = None,
    mounts: Sequence[Mapping[str, Any]] | None = None,
    cdi_devices: Sequence[str] | None = None,
    timeout: float = 30.0,
) -> str:
    """Create (not start) a container in ``pod_id``; returns its id.

    ``command`` None keeps the image's (sleep 3600). ``devices``: dicts with
    container_path/host_path/permissions, or (host_path, container_path[, perms]).
    ``mounts``: dicts of CRI Mount fields. ``cdi_devices``: CDI names (CRI CDIDevice).
    A privileged container needs a pod run with ``privileged=True``."""
    pb = client.pb
    devs = []
    for d in devices or ():
        if isinstance(d, Mapping):
            devs.append(pb.Device(container_path=d.get("container_path", d.get("host_path")),
                                  host_path=d["host_path"], permissions=d.get("permissions", "rwm")))
        else:
            host, ctr_path, *perm = d
            devs.append(pb.Device(host_path=host, container_path=ctr_path, permissions=perm[0] if perm else "rwm"))
    config = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name, attempt=0),
        image=pb.ImageSpec(image=image),
        command=list(command) if command else [],
        args=list(args or []),
        envs=_kv_list(pb, envs),
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        devices=devs,
        mounts=[pb.Mount(**m) for m in (mounts or ())],
        log_path=f"{name}.log",
        linux=pb.LinuxContainerConfig(
            security_context=pb.LinuxContainerSecurityContext(
                privileged=privileged,
                namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD),
            ),
        ),
    )
    if cdi_devices:
        config.CDI_devices.extend(pb.CDIDevice(name=n) for n in cdi_devices)
    resp = client.call("CreateContainer", pod_sandbox_id=pod_id, config=config,
                       sandbox_config=pod_config, timeout=timeout)
    return resp.container_id


def start_container(client: CRIClient, container_id: str, timeout: float = 30.0) -> None:
    client.call("StartContainer", container_id=container_id, timeout=timeout)
    wait_until(lambda: container_state(client, container_id) in ("CONTAINER_RUNNING",
                                                                 "CONTAINER_EXITED"),
               f"container {container_id[:12]} to start", timeout=timeout)


def container_state(client: CRIClient, container_id: str) -> str:
    status = client.call("ContainerStatus", container_id=container_id).status
    return client.pb.ContainerState.Name(status.state)


def container_status(client: CRIClient, container_id: str, verbose: bool = False):
    """The raw ContainerStatusResponse."""
    return client.call("ContainerStatus", container_id=container_id, verbose=verbose)


def container_spec(client: CRIClient, container_id: str) -> dict:
    """The OCI spec containerd stored for the container (ContainerStatus verbose info)."""
    resp = container_status(client, container_id, verbose=True)
    info = json.loads(resp.info["info"])
    return info["runtimeSpec"]


@dataclasses.dataclass
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def exec_sync(client: CRIClient, container_id: str, cmd: Sequence[str], timeout: int = 10) -> ExecResult:
    """Run ``cmd`` in a running container via CRI ExecSync; capture its output."""
    # ExecSyncRequest has its own "timeout" field (seconds), so build the request here.
    request = client.pb.ExecSyncRequest(container_id=container_id, cmd=list(cmd), timeout=int(timeout))
    resp = client.call("ExecSync", request, timeout=timeout + 10)
    return ExecResult(resp.exit_code, resp.stdout.decode(errors="replace"), resp.stderr.decode(errors="replace"))


def start_and_exec(client: CRIClient, container_id: str, cmd: Sequence[str], timeout: int = 10) -> ExecResult:
    """Start a created container, then ExecSync ``cmd`` in it."""
    start_container(client, container_id)
    return exec_sync(client, container_id, cmd, timeout=timeout)


def remove_pod(client: CRIClient, pod_id: str, timeout: float = 30.0) -> None:
    """Stop and remove a pod sandbox and its containers."""
    client.call("StopPodSandbox", pod_sandbox_id=pod_id, timeout=timeout)
    client.call("RemovePodSandbox", pod_sandbox_id=pod_id, timeout=timeout)
