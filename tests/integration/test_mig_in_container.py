"""A MIG device given to a container in a real containerd 1.7.24 the two ways a device
plugin gives one: its DeviceSpecs (the control nodes, the parent's /dev/nvidiaN and the GPU
and compute instance capability nodes, with NVIDIA_VISIBLE_DEVICES naming the MIG UUID)
through the NRI plugin, or its CDI name. NVIDIA's nvidia-smi -L inside lists that MIG device
and its parent only.

The node is an a100 staged by the real agent with every GPU booting the all-3g.20gb layout
(two MIG devices per GPU) and NVIDIA's nvidia-smi.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from mokka.core import names
from tests.integration.nodes import GLIBC_IMAGE, native_node
from tests.integration.nriplugin import make, plugin_for
from tests.integration.pods import create_container, exec_sync, run_pod, start_container
from tests.peers import peer

PARENT = 1                      # the MIG device given is GPU 1's first


@pytest.fixture(scope="module")
def mig_node(tmp_path_factory):
    with native_node(tmp_path_factory, "mig-node", "a100", "--mig-layout", "all-3g.20gb",
                     "--nvidia-smi", peer("NVIDIA_SMI")) as node:
        yield node


def host_env(overlay) -> dict:
    return {"PATH": os.environ["PATH"], "LD_LIBRARY_PATH": overlay.lib,
            names.ENV_NVML_CONFIG: overlay.profile}


def host_listing(overlay) -> list[str]:
    done = subprocess.run([os.path.join(overlay.bin, "nvidia-smi"), "-L"], env=host_env(overlay),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def expected(overlay) -> tuple[list[str], str]:
    """What a container given GPU 1's first MIG device lists, and that device's UUID."""
    lines = host_listing(overlay)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"GPU {PARENT}: "))
    parent, first_mig = lines[start], lines[start + 1]
    assert "MIG 3g.20gb" in first_mig, lines
    uuid = first_mig.split("UUID: ")[1].rstrip(")")
    return [parent.replace(f"GPU {PARENT}: ", "GPU 0: ", 1), first_mig], uuid


def instance_minors(overlay) -> tuple[int, int]:
    """The capability minors of the MIG device's GPU and compute instance, as the device
    plugin finds them: NVML's instance ids, looked up in mig-minors."""
    code = ("import json, pynvml as n; n.nvmlInit(); "
            f"m = n.nvmlDeviceGetMigDeviceHandleByIndex(n.nvmlDeviceGetHandleByIndex({PARENT}), 0); "
            "print(json.dumps([n.nvmlDeviceGetGpuInstanceId(m), n.nvmlDeviceGetComputeInstanceId(m)]))")
    done = subprocess.run([sys.executable, "-c", code], env=host_env(overlay), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    gi, ci = json.loads(done.stdout)
    with open(os.path.join(overlay.proc_caps, "mig-minors")) as f:
        minors = dict(line.split() for line in f)
    return (int(minors[f"gpu{PARENT}/gi{gi}/access"]), int(minors[f"gpu{PARENT}/gi{gi}/ci{ci}/access"]))


@pytest.fixture
def plugin(glibc_containerd, zipapp, mig_node):
    with plugin_for(glibc_containerd, zipapp, mig_node) as started:
        yield started


def test_the_device_plugins_devicespecs_show_that_mig_device_and_its_parent(glibc_containerd, plugin,
                                                                           mig_node):
    _, overlay = mig_node
    want, uuid = expected(overlay)
    gi_minor, ci_minor = instance_minors(overlay)
    nodes = [(overlay.join(f"dev/{n}"), f"/dev/{n}") for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")]
    nodes += [(overlay.gpu_node(PARENT), f"/dev/nvidia{PARENT}")]
    nodes += [(overlay.cap_node(m), f"/dev/nvidia-caps/nvidia-cap{m}") for m in (gi_minor, ci_minor)]
    cri = glibc_containerd.client()
    _, cid, _ = make(cri, "mig-specs", image=GLIBC_IMAGE, envs={"NVIDIA_VISIBLE_DEVICES": uuid},
                     devices=[{"host_path": h, "container_path": c, "permissions": "rw"}
                              for h, c in nodes if os.path.exists(h)])
    start_container(cri, cid)
    listed = exec_sync(cri, cid, ["nvidia-smi", "-L"])
    assert listed.exit_code == 0, listed
    assert listed.stdout.splitlines() == want


def test_the_mig_devices_cdi_name_shows_that_mig_device_and_its_parent(containerd_factory, mig_node):
    root, overlay = mig_node
    want, uuid = expected(overlay)
    spec_dir = os.path.join(root, names.CDI_SPEC_DIR.lstrip("/"))
    with open(os.path.join(spec_dir, names.CDI_SPEC_MIG_FILE)) as f:
        assert uuid in [d["name"] for d in yaml.safe_load(f)["devices"]]
    from tests.integration.busybox import build_busybox_image
    containerd = containerd_factory(enable_cdi=True, cdi_spec_dirs=[spec_dir])
    image = build_busybox_image(os.path.join(containerd.workdir, "glibc-image.tar"), ref=GLIBC_IMAGE,
                                extra_root=peer("LIBC6_ROOT"))
    containerd.import_image(image, GLIBC_IMAGE)
    cri = containerd.client()
    pod_id, pod_config = run_pod(cri, "mig-cdi", "default")
    cid = create_container(cri, pod_id, pod_config, "app", None, image=GLIBC_IMAGE,
                           cdi_devices=[f"{names.CDI_KIND_GPU}={uuid}"])
    start_container(cri, cid)
    listed = exec_sync(cri, cid, ["nvidia-smi", "-L"])
    assert listed.exit_code == 0, listed
    assert listed.stdout.splitlines() == want
