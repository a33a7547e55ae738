"""The published driver root answers NVIDIA's GPU Operator validator (v25.10.0,
``nvidia-validator --component driver``) as a real driver root does. These are the calls it
makes, in its order, made here by hand against a node the real agent staged:

1. it finds ``libnvidia-ml.so.1`` and ``nvidia-smi`` under the root (links resolved) and runs
   that nvidia-smi, no arguments, with the library first in LD_PRELOAD;
2. the root has its own ``dev/``, so it loads the modules itself:
   ``chroot <root> /sbin/modprobe nvidia`` (then nvidia-uvm, nvidia-modeset) — exit 0 each;
3. it makes the control nodes in ``<root>/dev`` unless they exist (they all do: it skips);
4. it lists ``<root>/sys/bus/pci/devices`` for the GPUs whose /dev/char links it makes.

Nothing here changes the host's /dev or the staged tree.
"""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from tests.integration.nodes import native_node

MODULES = ("nvidia", "nvidia-uvm", "nvidia-modeset")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with native_node(tmp_path_factory, "driver-root", "t4") as (root, overlay):
        yield os.path.join(root, "run/nvidia/driver")


def snapshot(top: str) -> list[tuple]:
    out = []
    for dirpath, dirs, files in os.walk(top):
        for name in sorted(dirs + files):
            st = os.lstat(os.path.join(dirpath, name))
            out.append((os.path.join(dirpath, name), st.st_mode, st.st_size, st.st_rdev, st.st_mtime_ns))
    return sorted(out)


def host_dev() -> list[tuple]:
    return snapshot("/dev/char") + sorted(os.listdir("/dev"))


def modprobe(root: str, *args: str) -> subprocess.CompletedProcess:
    # As the validator's nvmodules runs it: chroot ROOT /sbin/modprobe MODULE, output combined.
    return subprocess.run(["chroot", root, "/sbin/modprobe", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=30)


def test_the_validators_modprobe_calls_succeed_and_change_nothing(node):
    tree, dev = snapshot(node), host_dev()
    for module in MODULES:
        done = modprobe(node, module)
        assert (done.returncode, done.stdout) == (0, ""), module
    assert modprobe(node, "nvidia_uvm").returncode == 0       # modprobe's spelling too
    assert snapshot(node) == tree
    assert host_dev() == dev


def test_a_module_the_node_has_not_loaded_gets_modprobes_own_line(node):
    done = modprobe(node, "nvidia-peermem")
    assert done.returncode == 1
    assert done.stdout == ("modprobe: FATAL: Module nvidia-peermem not found in directory "
                           f"/lib/modules/{os.uname().release}\n")
    quiet = modprobe(node, "-q", "gdrdrv")
    assert (quiet.returncode, quiet.stdout) == (1, "")


def test_unloading_is_refused_in_one_line(node):
    done = modprobe(node, "-r", "nvidia")
    assert done.returncode == 1
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("modprobe: ERROR: -r: ")


@pytest.mark.parametrize("name, major, minor", [("nvidiactl", 195, 255), ("nvidia-modeset", 195, 254),
                                                ("nvidia-uvm", 510, 0), ("nvidia-uvm-tools", 510, 1)])
def test_every_control_node_the_validator_would_make_is_there(node, name, major, minor):
    st = os.stat(os.path.join(node, "dev", name))
    assert stat.S_ISCHR(st.st_mode)
    assert (os.major(st.st_rdev), os.minor(st.st_rdev)) == (major, minor)


def test_the_root_lists_every_gpu_on_its_own_pci_bus(node):
    devices = os.path.join(node, "sys/bus/pci/devices")
    classes = {}
    for bdf in os.listdir(devices):
        with open(os.path.join(devices, bdf, "class")) as f, open(os.path.join(devices, bdf, "vendor")) as v:
            classes[bdf] = (f.read(), v.read())
    gpus = {bdf: c for bdf, c in classes.items() if c[1] == "0x10de\n"}
    assert gpus == {bdf: ("0x030200\n", "0x10de\n")
                    for bdf in ("0000:3b:00.0", "0000:86:00.0", "0000:af:00.0", "0000:d8:00.0")}
    # The rest are the bridges above them: a root port and a switch's two ports per GPU.
    assert sorted(bdf for bdf, c in classes.items() if c[0] == "0x060400\n") == [
        "0000:00:01.0", "0000:00:02.0", "0000:00:03.0", "0000:00:04.0",
        "0000:39:00.0", "0000:3a:00.0", "0000:84:00.0", "0000:85:00.0",
        "0000:ad:00.0", "0000:ae:00.0", "0000:d6:00.0", "0000:d7:00.0"]
    assert len(classes) == 16


def test_the_trees_nvidia_smi_runs_with_the_trees_library_preloaded(node):
    smi = os.path.realpath(os.path.join(node, "usr/bin/nvidia-smi"))
    lib = os.path.realpath(os.path.join(node, "usr/lib64/libnvidia-ml.so.1"))
    env = {**os.environ, "LD_PRELOAD": lib}
    done = subprocess.run([smi], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "NVIDIA T4" in done.stdout
