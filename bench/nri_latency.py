"""CreateContainer latency of the real nri-plugin process over a Unix socket.

Starts the fake runtime (tests/nri/fakeruntime.py, real wire format), runs
``python -m mokka nri-plugin`` against it exactly as the DaemonSet would
(whatever handler that command wires), and times N sequential
CreateContainer calls of realistic 4-12 KB requests, as containerd 1.7 makes
them one at a time.

    python bench/nri_latency.py [--count 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests", "nri")]

from fakeruntime import FakeRuntime, remove_socket_dir, short_socket_path  # noqa: E402

from mokka.nri.codec import ttrpc  # noqa: E402
from mokka.nri.proto import nri_pb2  # noqa: E402

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


def request(i: int, target: int, rnd: random.Random) -> bytes:
    uid = f"{rnd.getrandbits(128):032x}"
    pod = nri_pb2.PodSandbox(
        id=f"{rnd.getrandbits(256):064x}", name=f"worker-{i}", uid=uid, namespace="default",
        labels={"app": "worker", "pod-template-hash": "5d8f7c9b6"},
        annotations={"kubernetes.io/config.source": "api", "kubernetes.io/config.seen": "now",
                     "nvml-mock.nvidia.com/devices": "true"},
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rnd = random.Random(args.seed)
    payloads = [request(i, rnd.randint(4096, 12288), rnd) for i in range(args.count)]

    path = short_socket_path()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "NRI_PLUGIN_"))}
    env["PYTHONPATH"] = ROOT
    with FakeRuntime(path) as runtime:
        proc = subprocess.Popen([sys.executable, "-m", "mokka", "nri-plugin",
                                 f"--socket-path={path}", "--health-addr=", "--log-level=error"],
                                env=env, cwd=ROOT)
        try:
            link = runtime.wait_link(timeout=30)
            link.handshake()
            for p in payloads[:20]:                           # warm-up
                link.wait_response(link.start_call("CreateContainer", p))
            latencies = []
            for p in payloads:
                start = time.perf_counter()
                resp = link.wait_response(link.start_call("CreateContainer", p))
                latencies.append((time.perf_counter() - start) * 1000)
                assert resp.code == ttrpc.OK, resp
        finally:
            proc.terminate()
            proc.wait(10)
    remove_socket_dir(path)
    latencies.sort()
    sizes = sorted(len(p) for p in payloads)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"CreateContainer x{len(latencies)}, requests {sizes[0]}-{sizes[-1]} bytes "
          f"(median {statistics.median(sizes):.0f}), handler as wired by nri-plugin")
    print(f"p50 {statistics.median(latencies):.3f} ms  p99 {p99:.3f} ms  "
          f"max {latencies[-1]:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
