"""The labels NVIDIA's gpu-feature-discovery (v0.18.0) writes on a node, from a profile.

GFD reads NVML on a real node; on a staged Mokka node it reads the mock library, which
answers from the profile. Here the same answers are taken from the profile directly, so
that a node that is never staged (a KWOK node) carries the labels a staged one would get.
tests/fleet/gfd/ holds what GFD v0.18.0 itself wrote on nodes staged from every built-in
profile; the tests hold these rules to those files.

The rules, as GFD applies them (its defaults: no sharing, no timestamp):
- the driver version splits into major, minor and revision; the CUDA version NVML reports
  (``system.cuda_version``) is the "runtime" version;
- the product is the GPU's name with characters other than letters, digits, ``-_.`` and
  spaces dropped and runs of spaces made one ``-``; a MIG device's is its parent's, then
  ``MIG``, then the MIG profile's name;
- the family follows the compute capability (volta below 7.5, turing from it; ampere below
  8.9, ada-lovelace from it; hopper 9; blackwell 10 and 12);
- ``mig.capable`` when a GPU is MIG-capable (mig_capable); ``gpu.mode`` from the PCI class
  (every Mokka GPU is a 3D controller: compute);
- ``gpu.clique`` (cluster UUID.clique id) when the GPUs are attached to an NVLink fabric
  and agree on both;
- the MIG strategy decides how MIG devices are counted: ``none`` counts GPUs, ``single``
  counts MIG devices as ``nvidia.com/gpu`` when every GPU holds one kind, and marks the
  node INVALID otherwise; ``mixed`` adds ``nvidia.com/mig-<profile>.*`` per kind.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

MIG_STRATEGIES = ("none", "single", "mixed")
PREFIX = "nvidia.com/"
GPU_RESOURCE = PREFIX + "gpu"
#: The PCI class every Mokka GPU has (pcibus.PCI_CLASS: a 3D controller).
GPU_MODE = "compute"
#: Fabric states in which a GPU counts as attached (the profile's ``fabric.state``).
ATTACHED_STATES = ("auto", "completed")
_UNPRINTABLE = re.compile(r"[^A-Za-z0-9\-_. ]")


class LabelError(ValueError):
    """A profile GFD could not label (e.g. a driver version not X.Y[.Z])."""


@dataclass(frozen=True)
class MigDevice:
    """One kind of MIG device: what GFD reads of its attributes."""
    name: str
    memory_mib: int
    multiprocessors: int
    gi_slices: int
    ci_slices: int
    copy: int
    decoders: int
    encoders: int
    jpegs: int
    ofas: int

    def attributes(self) -> dict[str, int]:
        return {"memory": self.memory_mib, "multiprocessors": self.multiprocessors,
                "slices.gi": self.gi_slices, "slices.ci": self.ci_slices,
                "engines.copy": self.copy, "engines.decoder": self.decoders,
                "engines.encoder": self.encoders, "engines.jpeg": self.jpegs,
                "engines.ofa": self.ofas}


def product(*parts: str) -> str:
    """GFD's product label: each part stripped of what a label may not hold, joined by -."""
    kept = ["-".join(_UNPRINTABLE.sub("", part).split()) for part in parts if part]
    return "-".join(part for part in kept if part)


def family(major: int, minor: int) -> str:
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    return {1: "tesla", 2: "fermi", 3: "kepler", 5: "maxwell", 6: "pascal", 9: "hopper",
            10: "blackwell", 12: "blackwell"}.get(major, "undefined")


def mig_capable(gpu: dict) -> bool:
    """A board with a MIG partition table, or one that declares GPU instances without
    publishing its table (gb300), as the mock library decides."""
    block = gpu.get("mig") or {}
    return bool(block.get("gpu_instance_profiles")) or int(block.get("max_gpu_instances") or 0) > 0


def mig_device(gpu: dict, name: str) -> MigDevice:
    """The MIG device a GPU instance of profile ``name`` holds with its default (whole)
    compute instance, as nvidia-smi mig -cgi NAME -C makes it."""
    for gi in (gpu.get("mig") or {}).get("gpu_instance_profiles") or []:
        if gi.get("name") == name:
            slices = int(gi.get("slices") or 0)
            whole = next((ci for ci in gi.get("compute_instance_profiles") or []
                          if int(ci.get("slices") or 0) == slices), {})
            return MigDevice(name=name, memory_mib=int(gi.get("memory_mib") or 0),
                             multiprocessors=int(whole.get("multiprocessors",
                                                           gi.get("multiprocessors") or 0)),
                             gi_slices=slices, ci_slices=int(whole.get("slices", slices)),
                             copy=int(gi.get("copy_engines") or 0),
                             decoders=int(gi.get("decoders") or 0),
                             encoders=int(gi.get("encoders") or 0),
                             jpegs=int(gi.get("jpegs") or 0), ofas=int(gi.get("ofas") or 0))
    raise LabelError(f"{name!r} is not one of the GPU's MIG profiles")


def _versions(system: dict) -> dict[str, str]:
    driver = str(system.get("driver_version") or "")
    parts = driver.split(".")
    if not 2 <= len(parts) <= 3:
        raise LabelError(f"driver_version {driver!r} is not X.Y[.Z]")
    major, minor, rev = parts[0], parts[1], parts[2] if len(parts) > 2 else ""
    cuda_major, cuda_minor = cuda_version(system)
    runtime = {"major": str(cuda_major), "minor": str(cuda_minor)}
    out = {"cuda.driver.major": major, "cuda.driver.minor": minor, "cuda.driver.rev": rev,
           "cuda.driver-version.major": major, "cuda.driver-version.minor": minor,
           "cuda.driver-version.revision": rev, "cuda.driver-version.full": driver,
           "cuda.runtime.major": runtime["major"], "cuda.runtime.minor": runtime["minor"],
           "cuda.runtime-version.major": runtime["major"],
           "cuda.runtime-version.minor": runtime["minor"],
           "cuda.runtime-version.full": f"{cuda_major}.{cuda_minor}"}
    return out


def cuda_version(system: dict) -> tuple[int, int]:
    """The CUDA version the driver reports (nvmlSystemGetCudaDriverVersion)."""
    if "cuda_version_major" in system:
        return int(system["cuda_version_major"]), int(system.get("cuda_version_minor") or 0)
    text = str(system.get("cuda_version") or "")
    try:
        major, _, minor = text.partition(".")
        return int(major), int(minor or 0)
    except ValueError:
        raise LabelError(f"cuda_version {text!r} is not X.Y") from None


def _full_gpu(gpu: dict, count: int, mig_on: bool) -> dict[str, str]:
    """The whole GPUs' labels. GFD labels GPUs with MIG on without their sharing
    settings, which it reads as zero replicas."""
    cc = gpu.get("compute_capability") or {}
    major, minor = int(cc.get("major") or 0), int(cc.get("minor") or 0)
    out = {"gpu.product": product(str(gpu.get("name") or "")), "gpu.count": str(count),
           "gpu.replicas": "0" if mig_on else "1", "gpu.sharing-strategy": "none"}
    memory_mib = int((gpu.get("memory") or {}).get("total_bytes") or 0) >> 20
    if memory_mib:
        out["gpu.memory"] = str(memory_mib)
    if major:
        out.update({"gpu.family": family(major, minor), "gpu.compute.major": str(major),
                    "gpu.compute.minor": str(minor)})
    return out


def _mig_kind(resource: str, parent: str, device: MigDevice, count: int) -> dict[str, str]:
    out = {f"{resource}.product": product(parent, "MIG", device.name),
           f"{resource}.count": str(count), f"{resource}.replicas": "1",
           f"{resource}.sharing-strategy": "none"}
    out.update({f"{resource}.{key}": str(value) for key, value in device.attributes().items()})
    return out


def _clique(gpus: list[dict]) -> dict[str, str]:
    ids = set()
    for gpu in gpus:
        fabric = gpu.get("fabric") or {}
        if not fabric or str(fabric.get("state", "auto")).lower() not in ATTACHED_STATES:
            continue
        ids.add((str(fabric.get("cluster_uuid") or ""), str(fabric.get("clique_id", ""))))
    if len(ids) != 1:
        return {}
    cluster, clique = ids.pop()
    return {"gpu.clique": f"{cluster}.{clique}"} if cluster and clique else {}


def labels(system: dict, gpus: list[dict], layout: list[str] | None = None,
           strategy: str = "none", machine: str | None = None) -> dict[str, str]:
    """GFD's labels for a node of ``gpus`` (merged profile devices; GFD labels the first
    GPU's kind), every GPU partitioned as ``layout`` (GPU instance profile names; None:
    MIG off, []: MIG on with no instances), counted by MIG ``strategy``. ``machine``: the
    DMI product name (Mokka stages the GPU's name there)."""
    if strategy not in MIG_STRATEGIES:
        raise LabelError(f"MIG strategy {strategy!r} is not one of {', '.join(MIG_STRATEGIES)}")
    if not gpus:
        return {}
    first = gpus[0]
    parent = str(first.get("name") or "")
    out = {"gpu.machine": product(machine if machine is not None else parent),
           **_versions(system),
           "mig.capable": "true" if any(mig_capable(g) for g in gpus) else "false",
           "mps.capable": "false", "vgpu.present": "false", "gpu.mode": GPU_MODE,
           **_full_gpu(first, len(gpus), layout is not None), **_clique(gpus)}
    if strategy != "none":
        out["mig.strategy"] = strategy
        per_node = Counter({name: n * len(gpus) for name, n in Counter(layout or []).items()})
        if strategy == "single" and layout is not None:
            if len(per_node) == 1:
                (name, n), = per_node.items()
                out.update(_mig_kind("gpu", parent, mig_device(first, name), n))
            else:
                out.update({"gpu.product": product(parent, "MIG", "INVALID"), "gpu.count": "0",
                            "gpu.replicas": "0", "gpu.sharing-strategy": "", "gpu.memory": "0"})
        elif strategy == "mixed":
            for name, n in sorted(per_node.items()):
                out.update(_mig_kind(f"mig-{name}", parent, mig_device(first, name), n))
    return {PREFIX + key: value for key, value in out.items()}


def resources(node_labels: dict[str, str], gpus: int, layout: list[str] | None,
              strategy: str) -> dict[str, str]:
    """The extended resources NVIDIA's device plugin advertises beside those labels: whole
    GPUs as ``nvidia.com/gpu`` (MIG devices, under ``single``); under ``mixed``, GPUs
    without MIG as ``nvidia.com/gpu`` and each kind of MIG device as ``nvidia.com/mig-*``."""
    if strategy == "mixed" and layout is not None:
        return {key[:-len(".count")]: value for key, value in sorted(node_labels.items())
                if key.startswith(PREFIX + "mig-") and key.endswith(".count")}
    count = node_labels.get(GPU_RESOURCE + ".count", str(gpus))
    return {GPU_RESOURCE: count} if int(count) else {}
