"""Realistic CreateContainer requests, as containerd 1.7 builds them for a CRI
container: default mounts, namespaces, a deny-all device rule, service-link env
vars up to a target size. Shared by the load tests and bench/nri_*.py."""

from __future__ import annotations

import random
from typing import Callable

from mokka.core import names
from mokka.nri.proto import nri_pb2

# The mounts containerd puts in every CRI container's spec.
DEFAULT_MOUNTS = [
    ("/proc", "proc", "proc", ["nosuid", "noexec", "nodev"]),
    ("/dev", "tmpfs", "tmpfs", ["nosuid", "strictatime", "mode=755", "size=65536k"]),
    ("/dev/pts", "devpts", "devpts", ["nosuid", "noexec", "newinstance", "ptmxmode=0666",
                                      "mode=0620", "gid=5"]),
    ("/dev/mqueue", "mqueue", "mqueue", ["nosuid", "noexec", "nodev"]),
    ("/sys", "sysfs", "sysfs", ["nosuid", "noexec", "nodev", "ro"]),
    ("/sys/fs/cgroup", "cgroup", "cgroup", ["nosuid", "noexec", "nodev", "relatime", "ro"]),
    ("/etc/hosts", "bind", "/var/lib/kubelet/pods/{uid}/etc-hosts", ["rbind", "rprivate", "rw"]),
    ("/dev/termination-log", "bind", "/var/lib/kubelet/pods/{uid}/containers/app/0",
     ["rbind", "rprivate", "rw"]),
    ("/etc/hostname", "bind", "/var/lib/containerd/sandboxes/{uid}/hostname",
     ["rbind", "rprivate", "rw"]),
    ("/etc/resolv.conf", "bind", "/var/lib/containerd/sandboxes/{uid}/resolv.conf",
     ["rbind", "rprivate", "rw"]),
    ("/dev/shm", "bind", "/run/containerd/sandboxes/{uid}/shm", ["rbind", "rprivate", "rw"]),
    ("/var/run/secrets/kubernetes.io/serviceaccount", "bind",
     "/var/lib/kubelet/pods/{uid}/volumes/kubernetes.io~projected/kube-api-access-x",
     ["rbind", "rprivate", "ro"]),
]


DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def request(i: int, target: int, rnd: random.Random,
            annotations: tuple[str, ...] = (names.ANNOTATION_DEVICES,), *,
            pod_annotations: dict[str, str] | None = None, namespace: str = "default",
            pod_seed: int | None = None, container: str = "app",
            container_annotations: dict[str, str] | None = None,
            devices: tuple[nri_pb2.LinuxDevice, ...] = (),
            rules: tuple[nri_pb2.LinuxDeviceCgroup, ...] = (),
            env: tuple[str, ...] = (DEFAULT_PATH,), extra_mounts: tuple[str, ...] = ()) -> bytes:
    """A serialized CreateContainerRequest of about ``target`` bytes whose pod
    opts in (value "true") to each annotation in ``annotations`` (plus
    ``pod_annotations`` as given). ``pod_seed`` makes the pod's ids the same
    for every container built with it (containers of one pod); ``devices``,
    ``rules`` (after the deny-all rule), ``env`` (before the service links)
    and ``extra_mounts`` (destinations of bind mounts) go into the container."""
    pod_rnd = random.Random(pod_seed) if pod_seed is not None else rnd
    uid = f"{pod_rnd.getrandbits(128):032x}"
    pod = nri_pb2.PodSandbox(
        id=f"{pod_rnd.getrandbits(256):064x}",
        name=f"worker-{i if pod_seed is None else pod_seed}", uid=uid, namespace=namespace,
        labels={"app": "worker", "pod-template-hash": "5d8f7c9b6"},
        annotations={"kubernetes.io/config.source": "api", "kubernetes.io/config.seen": "now",
                     **{key: "true" for key in annotations}, **(pod_annotations or {})},
        linux=nri_pb2.LinuxPodSandbox(cgroup_parent=f"/kubepods/besteffort/pod{uid}"))
    ctr = nri_pb2.Container(
        id=f"{rnd.getrandbits(256):064x}", pod_sandbox_id=pod.id, name=container,
        args=["/bin/sh", "-c", "sleep infinity"],
        env=[*env, "HOSTNAME=" + pod.name, "KUBERNETES_SERVICE_HOST=10.96.0.1",
             "KUBERNETES_SERVICE_PORT=443"],
        annotations={"io.kubernetes.cri.container-type": "container",
                     "io.kubernetes.cri.sandbox-id": pod.id,
                     "io.kubernetes.cri.sandbox-name": pod.name,
                     "io.kubernetes.cri.sandbox-namespace": pod.namespace,
                     "io.kubernetes.cri.image-name": "registry.k8s.io/pause:3.9",
                     **(container_annotations or {})},
        mounts=[*(nri_pb2.Mount(destination=d, type=t, source=s.format(uid=uid), options=o)
                  for d, t, s, o in DEFAULT_MOUNTS),
                *(nri_pb2.Mount(destination=d, type="bind", source=d, options=["rbind", "ro"])
                  for d in extra_mounts)],
        linux=nri_pb2.LinuxContainer(
            namespaces=[nri_pb2.LinuxNamespace(type=t, path=f"/proc/1/ns/{t}")
                        for t in ("pid", "ipc", "uts", "network", "mount")],
            devices=list(devices),
            resources=nri_pb2.LinuxResources(devices=[
                nri_pb2.LinuxDeviceCgroup(allow=False, type="a", access="rwm"), *rules]),
            cgroups_path=f"kubepods-besteffort-pod{uid}.slice:cri-containerd:{i}"))
    n = 0
    while ctr.ByteSize() + pod.ByteSize() < target:     # service links and friends
        ctr.env.append(f"SERVICE_{n}_PORT=tcp://10.96.{n % 250}.{n % 200}:8080")
        n += 1
    return nri_pb2.CreateContainerRequest(pod=pod, container=ctr).SerializeToString()


def _gpu(n: int) -> tuple[tuple[nri_pb2.LinuxDevice, ...], tuple[nri_pb2.LinuxDeviceCgroup, ...]]:
    """/dev/nvidiaN with the cgroup rule allowing exactly it: the device plugin's raw evidence."""
    node = nri_pb2.LinuxDevice(path=f"{names.CONTAINER_DEV_DIR}/{names.GPU_NODE_PREFIX}{n}",
                               type="c", major=names.NVIDIA_MAJOR, minor=n)
    rule = nri_pb2.LinuxDeviceCgroup(allow=True, type="c", access="rw")
    rule.major.value, rule.minor.value = names.NVIDIA_MAJOR, n
    return (node,), (rule,)


def _cdi(*devices: str) -> dict[str, str]:
    """CRI CDI devices as containerd 1.7 passes them: a cdi.k8s.io/ container annotation."""
    return {f"{names.CDI_CRI_ANNOTATION_PREFIX}nvidia-device-plugin": ",".join(devices)}


_PRIVILEGED = {"devices": _gpu(0)[0] + _gpu(1)[0],
               "rules": (nri_pb2.LinuxDeviceCgroup(allow=True, type="a", access="rwm"),)}
_MIG_UUID = "MIG-5c89852c-d268-c3f3-1b07-005d5ae1dc3f"

#: The varied mix: (name, request keywords, or a function of the request's number
#: giving them: allocations name one of 8 GPUs). One of each per round, in this order.
MIX: tuple[tuple[str, "dict | Callable[[int], dict]"], ...] = (
    ("devices annotation", {}),
    ("nothing selected", {"annotations": ()}),
    ("raw allocation", lambda i: {"annotations": (), "devices": _gpu(i // len(MIX) % 8)[0],
                                  "rules": _gpu(i // len(MIX) % 8)[1]}),
    ("CDI allocation (device plugin)", lambda i: {"annotations": (), "container_annotations": _cdi(
        f"{names.CDI_KIND_DEVICE_PLUGIN}=GPU-0f1e2d3c-{i // len(MIX) % 8}")}),
    ("CDI allocation (DRA claim)", {"annotations": (),
                                    "container_annotations": _cdi(
                                        f"{names.CDI_KIND_DRA_CLAIM}=claim-7-gpu-0")}),
    ("MIG allocation", {"annotations": (),
                        "container_annotations": _cdi(f"{names.CDI_KIND_DEVICE_PLUGIN}={_MIG_UUID}")}),
    ("infiniband", {"annotations": (names.ANNOTATION_INFINIBAND,)}),
    ("imex channels", {"annotations": (names.ANNOTATION_IMEX_CHANNELS,)}),
    ("devices + infiniband + imex", {"annotations": (names.ANNOTATION_DEVICES,
                                                     names.ANNOTATION_INFINIBAND,
                                                     names.ANNOTATION_IMEX_CHANNELS)}),
    ("allocation and devices annotation", {"devices": _gpu(1)[0], "rules": _gpu(1)[1]}),
    ("excluded namespace", {"namespace": "kube-system"}),
    ("opt-out", {"pod_annotations": {names.ANNOTATION_OPT_OUT: "false"}}),
    ("privileged, no allocation", {"annotations": (), **_PRIVILEGED}),
    ("image with its own PATH and LD_PRELOAD", {"env": ("PATH=/opt/conda/bin:/usr/bin:/bin",
                                                        "LD_PRELOAD=/usr/lib/libjemalloc.so")}),
    ("overlay already mounted", {"extra_mounts": (names.OVERLAY_MOUNT_PATH,)}),
    ("one pod: container app", {"pod_seed": 7, "container": "app"}),
    ("one pod: container sidecar", {"pod_seed": 7, "container": "sidecar",
                                    "env": ("PATH=/bin",)}),
    ("one pod: init container", {"pod_seed": 7, "container": "init"}),
)


def mixed(count: int, rnd: random.Random) -> list[bytes]:
    """``count`` requests of 4-12 KB cycling through MIX."""
    out = []
    for i in range(count):
        kw = MIX[i % len(MIX)][1]
        out.append(request(i, rnd.randint(4096, 12288), rnd, **(kw(i) if callable(kw) else kw)))
    return out
