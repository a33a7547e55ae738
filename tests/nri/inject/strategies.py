"""Hypothesis strategies for the decision's inputs: pods, containers, configs and
node views over the values the rules care about, shared by the property tests."""

from __future__ import annotations

import os
from dataclasses import replace

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from mokka.core import names
from mokka.nri.inject import Config, Container, Device, DeviceRule, Pod
from tests.nri.inject.builders import MANAGEMENT_ALL, MOUNT, control_nodes, full_view, gpu_node

#: 1000 pods/containers per property by default (the suite stays ~15 s);
#: MOKKA_PROPERTY_EXAMPLES scales it up for a soak run.
EXAMPLES = int(os.environ.get("MOKKA_PROPERTY_EXAMPLES", "1000"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

#: Short strings over the characters the rules care about (separators,
#: whitespace, digits, case) plus one non-ASCII digit; cheaper than full text.
noise = st.text(alphabet="aT/=,: \t\n09\u0663-.", max_size=10)
annotation_values = st.sampled_from(["true", "TRUE", " true ", "false", "FALSE", "", "yes", "1"]) | noise
cdi_name_pool = [f"{names.CDI_KIND_DEVICE_PLUGIN}=0", f"{names.CDI_KIND_DEVICE_PLUGIN}=GPU-1",
                 f"{names.CDI_KIND_DEVICE_PLUGIN}=", f"{names.CDI_KIND_DEVICE_PLUGIN}=a b",
                 f"{names.CDI_KIND_DRA_CLAIM}=c/1", f"{names.CDI_KIND_DRA_CLAIM}=c1",
                 "k8s.device-plugin.nvidia.com/gdrcopy=all", "k8s.device-plugin.nvidia.com/mofed=all",
                 f"{names.CDI_KIND_GPU}=0", names.CDI_MOCK_DEVICE_ALL, MANAGEMENT_ALL]
cdi_names = st.sampled_from(cdi_name_pool) | noise
pod_keys = st.sampled_from([names.ANNOTATION_DEVICES, names.ANNOTATION_INFINIBAND, names.ANNOTATION_OPT_OUT,
                            names.ANNOTATION_IMEX_CHANNELS, names.TOOLKIT_CDI_ANNOTATION,
                            names.TOOLKIT_CDI_ANNOTATION_POD,
                            f"{names.TOOLKIT_CDI_ANNOTATION_CONTAINER_PREFIX}main"]) | noise
env_keys = st.sampled_from([names.ENV_PATH, names.ENV_LD_LIBRARY_PATH, names.ENV_LD_PRELOAD, names.ENV_IB,
                            names.ENV_NVML_CONFIG, names.ENV_NVML_VISIBLE_DEVICES, names.ENV_NODE_NAME,
                            names.ENV_CDI_DEVICE_SOURCE, names.ENV_NVIDIA_VISIBLE_DEVICES]) | noise
env_values = st.sampled_from(["", "off", "full", "none", "all", MOUNT.bin, MOUNT.lib, "/usr/bin:/bin",
                              f"{MOUNT.bin}:/bin"]) | noise
env_entries = st.builds(lambda k, v: f"{k}={v}", env_keys, env_values) | noise
small_int = st.integers(min_value=-2, max_value=300)
devices = st.builds(Device, path=st.sampled_from(["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia01",
                                                  "/dev/nvidiactl", "/dev/nvidia-uvm"]) | noise,
                    type=st.sampled_from(["c", "b", "u", "p", ""]),
                    major=st.sampled_from([names.NVIDIA_MAJOR, names.UVM_MAJOR]) | small_int,
                    minor=st.sampled_from([0, 1, 255]) | small_int)
rules = st.builds(DeviceRule, allow=st.booleans(), type=st.sampled_from(["a", "c", "b", ""]),
                  major=st.none() | st.sampled_from([names.NVIDIA_MAJOR]) | small_int,
                  minor=st.none() | st.sampled_from([0, 1]) | small_int,
                  access=st.sampled_from(["rwm", "r", "w", "m", "", "RW"]) | noise)
destinations = st.sampled_from([MOUNT.root, MOUNT.root + "/", MOUNT.root + "//", "/data", ""]) | noise
containers = st.builds(
    Container, name=st.sampled_from(["main", "side", ""]) | noise,
    annotations=st.dictionaries(st.sampled_from([f"{names.CDI_CRI_ANNOTATION_PREFIX}gpu", "other"]) | noise,
                                st.lists(cdi_names, max_size=3).map(",".join), max_size=2),
    env=st.lists(env_entries, max_size=8).map(tuple),
    mount_destinations=st.lists(destinations, max_size=2).map(tuple),
    devices=st.lists(devices, max_size=4).map(tuple),
    device_rules=st.lists(rules, max_size=4).map(tuple),
    cdi_devices=st.lists(cdi_names, max_size=3).map(tuple))
pods = st.builds(Pod, namespace=st.sampled_from(["default", "kube-system", "gpu-operator"]) | noise,
                 name=noise, annotations=st.dictionaries(pod_keys, annotation_values | st.lists(
                     cdi_names, max_size=3).map(",".join), max_size=5))
configs = st.builds(
    Config, device_injection_mode=st.sampled_from(["raw", "cdi"]) | noise,
    node_name=st.sampled_from(["", "node-a"]), toolkit_cdi_annotations=st.booleans(),
    cdi_annotation_namespaces=st.sampled_from([frozenset(), frozenset({"gpu-operator", "default"})]),
    ld_preload_shims=st.sampled_from([names.LD_PRELOAD_SHIMS, (), ("/abs/lib.so", "rel/lib.so")]),
    overlay_mount_path=st.sampled_from([names.OVERLAY_MOUNT_PATH, "/mock", "/opt/nvml-mock/"]))
EVIDENCE = (
    {"devices": (gpu_node(0),) + control_nodes(),
     "device_rules": (DeviceRule(True, "c", names.NVIDIA_MAJOR, 0, "rw"),)},
    {"cdi_devices": (f"{names.CDI_KIND_DEVICE_PLUGIN}=GPU-1",)},
    {"annotations": {f"{names.CDI_CRI_ANNOTATION_PREFIX}gpu": f"{names.CDI_KIND_DRA_CLAIM}=c1"}},
)


def _with_evidence(container: Container, evidence: dict) -> Container:
    merged = {field: getattr(container, field) + value if isinstance(value, tuple)
              else {**getattr(container, field), **value} for field, value in evidence.items()}
    return container._replace(**merged)


allocated_containers = st.builds(_with_evidence, containers, st.sampled_from(EVIDENCE))
views = st.builds(
    lambda full, dev, imex, staged, accepts, edits, hcas: replace(
        full, dev_nodes=full.dev_nodes if dev else (), imex_channels=full.imex_channels if imex else (),
        cdi_spec_staged=staged, runtime_accepts_cdi=accepts,
        cdi_edits=full.cdi_edits if edits else {}, hca_count=hcas),
    st.just(full_view()), st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans(),
    st.integers(min_value=0, max_value=2))
