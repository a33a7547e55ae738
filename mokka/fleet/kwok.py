"""Node objects for KWOK: GPU nodes a scheduler can be tested on without kubelets.

KWOK (kwok.x-k8s.io) takes over every Node whose ``kwok.x-k8s.io/node`` annotation is
``fake`` and, with its default stages, keeps it Ready and moves the pods bound to it to
Running. What makes such a node a GPU node is what the real components would have put on
it: gpu-feature-discovery's labels (mokka.fleet.gfd, from the profile), the device
plugin's extended resources in capacity and allocatable, and NFD's PCI label for NVIDIA.
KWOK's taint (``kwok.x-k8s.io/node=fake:NoSchedule``) keeps real workloads off them: a
scheduler test's pods tolerate it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mokka.fleet import gfd

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
#: The label NFD writes for a node with an NVIDIA PCI device (what the GPU Operator selects on).
NFD_NVIDIA_LABEL = "feature.node.kubernetes.io/pci-10de.present"
ARCHES = ("amd64", "arm64")
MAX_NODES = 10000
#: A node name: a DNS-1123 subdomain (Kubernetes' rule for Node names).
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_MAX = 253


@dataclass(frozen=True)
class Shape:
    """What every node of one pool is: its GPUs' labels and resources, and the host."""
    gpu_labels: dict
    gpu_resources: dict
    extra_labels: dict = field(default_factory=dict)
    arch: str = "amd64"
    cpu: str = "32"
    memory: str = "256Gi"
    pods: str = "110"


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name a Node, or None."""
    if len(name) > _NAME_MAX:
        return f"{name[:40]}... is longer than {_NAME_MAX} characters"
    if not _NAME.fullmatch(name):
        return (f"{name!r} is not a valid node name (lower-case letters, digits, '-' and '.', "
                "starting and ending with a letter or digit)")
    return None


def shape(system: dict, gpus: list[dict], layout: list[str] | None, strategy: str, **host) -> Shape:
    labels = gfd.labels(system, gpus, layout, strategy)
    return Shape(gpu_labels=labels, gpu_resources=gfd.resources(labels, len(gpus), layout, strategy),
                 **host)


def node(name: str, of: Shape) -> dict:
    """One Node object, as a dict in the order kubectl prints one."""
    labels = {"beta.kubernetes.io/arch": of.arch, "beta.kubernetes.io/os": "linux",
              "kubernetes.io/arch": of.arch, "kubernetes.io/hostname": name,
              "kubernetes.io/os": "linux", "type": "kwok", NFD_NVIDIA_LABEL: "true",
              **of.extra_labels, **of.gpu_labels}
    resources = {"cpu": of.cpu, "memory": of.memory, "pods": of.pods, **of.gpu_resources}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"taints": [dict(KWOK_TAINT)]},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "nodeInfo": {"architecture": of.arch, "bootID": "", "containerRuntimeVersion": "",
                         "kernelVersion": "", "kubeProxyVersion": "fake", "kubeletVersion": "fake",
                         "machineID": "", "operatingSystem": "linux", "osImage": "",
                         "systemUUID": ""},
            "phase": "Running",
        },
    }
