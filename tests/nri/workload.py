"""Realistic CreateContainer requests, as containerd 1.7 builds them for a CRI
container: default mounts, namespaces, a deny-all device rule, service-link env
vars up to a target size. Shared by the load tests and bench/nri_*.py."""

from __future__ import annotations

import random

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


def request(i: int, target: int, rnd: random.Random,
            annotations: tuple[str, ...] = (names.ANNOTATION_DEVICES,)) -> bytes:
    """A serialized CreateContainerRequest of about ``target`` bytes whose pod
    opts in (value "true") to each annotation in ``annotations``."""
    uid = f"{rnd.getrandbits(128):032x}"
    pod = nri_pb2.PodSandbox(
        id=f"{rnd.getrandbits(256):064x}", name=f"worker-{i}", uid=uid, namespace="default",
        labels={"app": "worker", "pod-template-hash": "5d8f7c9b6"},
        annotations={"kubernetes.io/config.source": "api", "kubernetes.io/config.seen": "now",
                     **{key: "true" for key in annotations}},
        linux=nri_pb2.LinuxPodSandbox(cgroup_parent=f"/kubepods/besteffort/pod{uid}"))
    ctr = nri_pb2.Container(
        id=f"{rnd.getrandbits(256):064x}", pod_sandbox_id=pod.id, name="app",
        args=["/bin/sh", "-c", "sleep infinity"],
        env=["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "HOSTNAME=" + pod.name, "KUBERNETES_SERVICE_HOST=10.96.0.1",
             "KUBERNETES_SERVICE_PORT=443"],
        annotations={"io.kubernetes.cri.container-type": "container",
                     "io.kubernetes.cri.sandbox-id": pod.id,
                     "io.kubernetes.cri.sandbox-name": pod.name,
                     "io.kubernetes.cri.sandbox-namespace": pod.namespace,
                     "io.kubernetes.cri.image-name": "registry.k8s.io/pause:3.9"},
        mounts=[nri_pb2.Mount(destination=d, type=t, source=s.format(uid=uid), options=o)
                for d, t, s, o in DEFAULT_MOUNTS],
        linux=nri_pb2.LinuxContainer(
            namespaces=[nri_pb2.LinuxNamespace(type=t, path=f"/proc/1/ns/{t}")
                        for t in ("pid", "ipc", "uts", "network", "mount")],
            resources=nri_pb2.LinuxResources(devices=[
                nri_pb2.LinuxDeviceCgroup(allow=False, type="a", access="rwm")]),
            cgroups_path=f"kubepods-besteffort-pod{uid}.slice:cri-containerd:{i}"))
    n = 0
    while ctr.ByteSize() + pod.ByteSize() < target:     # service links and friends
        ctr.env.append(f"SERVICE_{n}_PORT=tcp://10.96.{n % 250}.{n % 200}:8080")
        n += 1
    return nri_pb2.CreateContainerRequest(pod=pod, container=ctr).SerializeToString()
