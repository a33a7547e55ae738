"""``mokka exec`` as a user runs it on a bare host: the command sees what a GPU-selected
container sees (the Go reader's /sys and /proc, the staged /dev nodes, the environment,
NVIDIA's table from the staged nvidia-smi), its exit status is the command's, bad input
is one line, and nothing of the host changes (its mount table, the staged tree)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests import goreader
from tests.conftest import REPO, run_mokka
from tests.integration.nodes import native_node

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mokka exec mounts: these tests run it as root")


@pytest.fixture(scope="module")
def exec_node(tmp_path_factory):
    with native_node(tmp_path_factory, "exec", "t4") as staged:
        yield staged


def mokka_exec(root: str, *command: str, env: dict | None = None):
    return run_mokka("exec", "--host-root", root, "--", *command, env=env)


def mount_table() -> list[str]:
    """The host's mounts: (mount point, root, filesystem, options) of each, ids left out."""
    with open("/proc/self/mountinfo") as f:
        return sorted(" ".join(line.split()[3:]) for line in f)


def tree(root: str) -> list[tuple]:
    """Every path under ``root`` with what a change would move."""
    seen = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            seen.append((path, st.st_mode, st.st_size, st.st_mtime_ns,
                         os.readlink(path) if os.path.islink(path) else None))
    return sorted(seen)


def test_the_go_reader_sees_every_staged_gpu_and_the_kernels_own_entries(exec_node, go_reader):
    root, _ = exec_node
    done = mokka_exec(root, go_reader)
    assert done.returncode == 0, done.stderr
    report = goreader.parse(done.stdout)
    goreader.sees_gpus(report, range(4))
    assert goreader.kernel_entries(report, range(4)) == goreader.host_pci_entries_beside(range(4))


def test_cat_reads_the_drivers_version_where_the_driver_writes_it(exec_node):
    root, overlay = exec_node
    done = mokka_exec(root, "cat", "/sys/module/nvidia/version", "/proc/driver/nvidia/version")
    assert done.returncode == 0, done.stderr
    with open(os.path.join(overlay.root, "driver/proc/driver/nvidia/version")) as f:
        assert done.stdout == "550.163.01\n" + f.read()


def test_the_staged_nodes_and_environment_and_nvidias_table(exec_node):
    root, _ = exec_node
    done = mokka_exec(root, "sh", "-c", "ls /dev; printenv MOCK_NVML_CONFIG; nvidia-smi -L")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for node in ("nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl", "nvidia-uvm", "null", "pts"):
        assert node in lines
    assert f"{root}/var/lib/nvml-mock/driver/config/config.yaml" in lines
    assert [line.split(" (UUID")[0] for line in lines if line.startswith("GPU ")] == [
        "GPU 0: NVIDIA T4", "GPU 1: NVIDIA T4", "GPU 2: NVIDIA T4", "GPU 3: NVIDIA T4"]


def test_dev_keeps_what_was_mounted_under_it(exec_node):
    root, _ = exec_node
    done = mokka_exec(root, "sh", "-c", "echo x > /dev/shm/mokka-exec-probe && cat /dev/shm/mokka-exec-probe"
                                        " && rm /dev/shm/mokka-exec-probe && test -c /dev/null")
    assert (done.returncode, done.stdout) == (0, "x\n"), done.stderr


@pytest.mark.parametrize("status", [0, 7, 255])
def test_the_exit_status_is_the_commands(exec_node, status):
    root, _ = exec_node
    assert mokka_exec(root, "sh", "-c", f"exit {status}").returncode == status


def test_a_missing_command_exits_127_with_one_line(exec_node):
    root, _ = exec_node
    done = mokka_exec(root, "no-such-command-mokka")
    assert done.returncode == 127
    # The proc hook may say what this kernel lacks (no /proc/modules) before it: its own lines.
    ours = [line for line in done.stderr.splitlines() if not line.startswith("nvml-mock-proc-hook: ")]
    assert ours == ["exec: no-such-command-mokka: command not found"]


def test_nothing_changes_on_the_host(exec_node, go_reader):
    root, overlay = exec_node
    mounts, staged = mount_table(), tree(overlay.root)
    done = mokka_exec(root, "sh", "-c", f"{go_reader} >/dev/null && touch {overlay.root}/probe; "
                                        f"mount -t tmpfs none /mnt 2>/dev/null; exit 0")
    assert done.returncode == 0, done.stderr
    assert mount_table() == mounts
    assert tree(overlay.root) == staged


def test_no_command_is_one_usage_line():
    done = run_mokka("exec", "--host-root", "/nonexistent")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "mokka exec: missing COMMAND (the command to run, after --) (see 'mokka exec --help')"]


def test_an_unstaged_root_is_one_line_naming_it_and_the_fix(tmp_path):
    done = run_mokka("exec", "--host-root", str(tmp_path), "--", "true")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"exec: no staged node at {tmp_path}/var/lib/nvml-mock; stage one first: mokka node-agent "
        f"--host-root {tmp_path} (or pass the --host-root / --overlay-host-path it staged under)"]


NEEDS_ROOT = ("exec: needs root (CAP_SYS_ADMIN) to mount the node's /dev, /sys and /proc/driver "
              "in a private mount namespace; run it as root (sudo mokka exec ...)")


@pytest.mark.parametrize("drop", [
    ["--reuid=65534", "--regid=65534", "--clear-groups"],
    ["--inh-caps=-sys_admin", "--bounding-set=-sys_admin"],
], ids=["an unprivileged user", "root without CAP_SYS_ADMIN"])
def test_without_the_privilege_it_is_one_line(exec_node, drop):
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("no setpriv (util-linux) to drop the privilege with")
    root, _ = exec_node
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([setpriv, *drop, sys.executable, "-m", "mokka", "exec", "--host-root", root,
                           "--", "true"], capture_output=True, text=True, env=env, cwd="/", timeout=60)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [NEEDS_ROOT]


# --- NVIDIA_VISIBLE_DEVICES: the caller's GPUs, as a container allocated them ------------------
# t4's GPUs 0-3 sit at 3b:00.0, 86:00.0, af:00.0 and d8:00.0 (10de:1eb8).
LIST_NVIDIA = ("import os; d = '/sys/bus/pci/devices'; "
               "print(sorted(e for e in os.listdir(d) if open(f'{d}/{e}/vendor').read() == '0x10de\\n'))")


UUID = "GPU-00000074-0000-0000-0000-00000000000"


@pytest.mark.skipif(shutil.which("lspci") is None, reason="no lspci here (pciutils): it is what this test runs")
@pytest.mark.parametrize("visible, lspci, listed, smi, nodes", [
    ("2", ["af:00.0 0302: 10de:1eb8"], "['0000:af:00.0']", [f"GPU 0: NVIDIA T4 (UUID: {UUID}2)"], ["nvidia2"]),
    (f"{UUID}1,3", ["86:00.0 0302: 10de:1eb8", "d8:00.0 0302: 10de:1eb8"], "['0000:86:00.0', '0000:d8:00.0']",
     [f"GPU 0: NVIDIA T4 (UUID: {UUID}1)", f"GPU 1: NVIDIA T4 (UUID: {UUID}3)"], ["nvidia1", "nvidia3"]),
], ids=["an index", "a uuid and an index"])
def test_dynamically_linked_readers_see_only_the_selected_gpus(exec_node, visible, lspci, listed, smi, nodes):
    """lspci and Python (through libc, where a preload would reach) list the selected GPUs'
    PCI devices and no other; NVIDIA's table agrees, and the other nodes are not in /dev."""
    root, _ = exec_node
    done = mokka_exec(root, "sh", "-c", f"lspci -n; {sys.executable} -c \"{LIST_NVIDIA}\"; "
                                        "nvidia-smi -L; ls /dev; printenv LD_PRELOAD MOCK_PCI_ROOT",
                      env={"NVIDIA_VISIBLE_DEVICES": visible})
    assert done.returncode == 1, done.stderr        # printenv: MOCK_PCI_ROOT is unset
    out = done.stdout.splitlines()
    assert [line for line in out if " 10de:" in line] == lspci
    assert listed in out
    assert [line for line in out if line.startswith("GPU ")] == smi
    assert [line for line in out if line.startswith("nvidia") and line[6:].isdigit()] == nodes
    assert "libmockfs" not in done.stdout


def test_visible_devices_naming_no_gpu_of_the_node_is_one_line_and_nothing_runs(exec_node):
    root, _ = exec_node
    done = mokka_exec(root, "sh", "-c", "echo ran", env={"NVIDIA_VISIBLE_DEVICES": "1,4"})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        "exec: NVIDIA_VISIBLE_DEVICES=1,4: '4' is no GPU of this node (indices 0, 1, 2, 3); "
        "give all, none, or a comma list of its GPU indices or UUIDs"]


@pytest.mark.skipif(shutil.which("lspci") is None, reason="no lspci here (pciutils): it is what this test runs")
@pytest.mark.parametrize("visible", ["none", "void", ""])
def test_no_gpu_selected_sees_the_driver_and_no_gpu(exec_node, visible):
    """As a container given none: the driver's files and control nodes, no GPU in /dev, /sys
    or NVML."""
    root, _ = exec_node
    done = mokka_exec(root, "sh", "-c", "lspci -n; nvidia-smi -L; ls /dev; cat /proc/driver/nvidia/version",
                      env={"NVIDIA_VISIBLE_DEVICES": visible})
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert [line for line in out if " 10de:" in line] == []
    assert "No devices found." in out and not [line for line in out if line.startswith("GPU ")]
    assert [line for line in out if line.startswith("nvidia") and line[6:].isdigit()] == []
    assert "nvidiactl" in out
    assert any(line.startswith("NVRM version: NVIDIA UNIX") for line in out), out


def test_the_go_reader_sees_the_selected_gpu_alone(exec_node, go_reader):
    root, _ = exec_node
    done = mokka_exec(root, go_reader, env={"NVIDIA_VISIBLE_DEVICES": "1"})
    assert done.returncode == 0, done.stderr
    goreader.sees_gpus(goreader.parse(done.stdout), [1])


# --- InfiniBand: MOCK_IB=full or sysfs is an InfiniBand-selected GPU container ---------------
# On h100, mlx5_0 is 0000:1c:00.0 beside GPU 0 at 0000:1a:00.0 (ConnectX-7). Every program,
# static or dynamically linked, reads the kernel's /sys with the hook's view (no libmockfs is
# preloaded where the hook is staged); `env -u LD_PRELOAD` makes sure of it for these.
KERNEL_VIEW = ("env -u LD_PRELOAD cat /sys/bus/pci/devices/0000:1c:00.0/class "
               "/sys/bus/pci/devices/0000:1c:00.0/vendor /sys/bus/pci/devices/0000:1c:00.0/device "
               "/sys/bus/pci/devices/0000:1a:00.0/class; "
               "env -u LD_PRELOAD readlink -f /sys/bus/pci/devices/0000:1c:00.0/driver; "
               "env -u LD_PRELOAD ls /sys/bus/pci/drivers/mlx5_core")


@pytest.fixture(scope="module")
def h100_node(tmp_path_factory):
    with native_node(tmp_path_factory, "exec-h100", "h100") as staged:
        yield staged


def exec_with_ib(root: str, ib: str | None, *command: str):
    """``mokka exec`` with the caller's MOCK_IB ``ib`` (None: unset)."""
    env = {k: v for k, v in os.environ.items() if k != "MOCK_IB"}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    if ib is not None:
        env["MOCK_IB"] = ib
    return subprocess.run([sys.executable, "-m", "mokka", "exec", "--host-root", root, "--", *command],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("tier", ["full", "sysfs"])
def test_an_infiniband_tier_gives_the_hcas_pci_functions_beside_the_gpus(h100_node, tier):
    root, _ = h100_node
    done = exec_with_ib(root, tier, "sh", "-c", "printenv MOCK_IB; " + KERNEL_VIEW)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:5] == [tier, "0x020700", "0x15b3", "0x1021", "0x030200"]
    assert lines[5] == "/sys/bus/pci/drivers/mlx5_core"
    assert lines[6:] == ["0000:1c:00.0", "0000:1d:00.0", "0000:4c:00.0", "0000:4d:00.0",
                         "0000:8c:00.0", "0000:8d:00.0", "0000:cc:00.0", "0000:cd:00.0"]


@pytest.mark.parametrize("ib", [None, "off"], ids=["unset", "off"])
def test_infiniband_unset_or_off_leaves_the_hcas_out_of_the_kernels_view(h100_node, ib):
    root, _ = h100_node
    done = exec_with_ib(root, ib, "sh", "-c", "printenv MOCK_IB; "
                        "env -u LD_PRELOAD test -e /sys/bus/pci/devices/0000:1c:00.0 && echo hca; "
                        "env -u LD_PRELOAD test -e /sys/bus/pci/drivers/mlx5_core && echo driver; "
                        "env -u LD_PRELOAD cat /sys/bus/pci/devices/0000:1a:00.0/class")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["off", "0x030200"]


def test_a_mock_ib_of_no_tier_is_one_line_and_nothing_runs(h100_node):
    root, _ = h100_node
    done = exec_with_ib(root, "on", "sh", "-c", "echo ran")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        "exec: MOCK_IB=on is no InfiniBand tier: give full, sysfs or off (unset: off)"]


LSPCI = shutil.which("lspci")


@pytest.mark.skipif(LSPCI is None, reason="no lspci here (pciutils): it is what this test runs")
@pytest.mark.parametrize("ib, preload, hcas", [
    ("full", True, True),
    ("full", False, True),
    ("off", False, False),
    ("off", True, False),    # the command's own LD_PRELOAD: the hook's view all the same
], ids=["full", "full, no preload", "off, no preload", "off"])
def test_lspci_lists_the_hcas_beside_the_gpus(h100_node, ib, preload, hcas):
    """lspci (dynamically linked) reads /sys/bus/pci/devices (libpci's sysfs method): the
    hook's view, with the HCAs only when the caller's MOCK_IB selects InfiniBand."""
    root, _ = h100_node
    done = exec_with_ib(root, ib, "sh", "-c", ("" if preload else "env -u LD_PRELOAD ") + f"{LSPCI} -n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    gpus = [line for line in lines if " 10de:" in line]
    nics = [line for line in lines if " 15b3:" in line]
    assert gpus[:2] == ["1a:00.0 0302: 10de:2330", "1b:00.0 0302: 10de:2330"] and len(gpus) == 8
    if hcas:
        assert nics[:2] == ["1c:00.0 0207: 15b3:1021", "1d:00.0 0207: 15b3:1021"] and len(nics) == 8
    else:
        assert nics == []


#: t4's PCI tree as `lspci -t` draws it: each GPU behind a root port and a switch's two ports.
T4_TREE = [
    "-[0000:00]-+-01.0-[39-3b]----00.0-[3a-3b]----00.0-[3b]----00.0",
    "           +-02.0-[84-86]----00.0-[85-86]----00.0-[86]----00.0",
    "           +-03.0-[ad-af]----00.0-[ae-af]----00.0-[af]----00.0",
    "           \\-04.0-[d6-d8]----00.0-[d7-d8]----00.0-[d8]----00.0"]


@pytest.mark.skipif(LSPCI is None, reason="no lspci here (pciutils): it is what this test runs")
def test_lspci_draws_each_gpu_under_its_bridges(exec_node):
    """lspci reads the kernel's /sys with the node's tree merged in (no libmockfs under exec):
    each GPU's branch is there whatever else the host has on its root bus."""
    root, _ = exec_node
    done = mokka_exec(root, LSPCI, "-tv")
    assert done.returncode == 0, done.stderr
    drawn = [line.partition("  NVIDIA Corporation ")[0] for line in done.stdout.splitlines()
             if line.endswith("[Tesla T4]")]
    assert branches(drawn) == branches(T4_TREE)
    done = mokka_exec(root, "sh", "-c", f"{LSPCI} -s 00:02.0; {LSPCI} -s 84:00.0 -v")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == \
        "00:02.0 PCI bridge: Intel Corporation Sky Lake-E PCI Express Root Port A"
    assert "\tBus: primary=84, secondary=85, subordinate=86, sec-latency=0" in done.stdout.splitlines()
    assert "\tKernel driver in use: pcieport" in done.stdout.splitlines()


_BRANCH = re.compile(r"[0-9a-f]{2}\.[0-7]-\[.*")


def branches(lines: list[str]) -> list[str]:
    """The bridge branches `lspci -t` draws, without the drawing to their left (which
    depends on what else the host has on the same bus)."""
    return [m.group(0) for m in map(_BRANCH.search, lines) if m]


@pytest.mark.skipif(LSPCI is None, reason="no lspci here (pciutils): it is what this test runs")
def test_lspci_draws_each_hca_on_its_gpus_switch(h100_node):
    root, _ = h100_node
    done = exec_with_ib(root, "full", LSPCI, "-t")
    assert done.returncode == 0, done.stderr
    assert branches(done.stdout.splitlines()) == branches([
        "-+-[0000:00]-+-01.0-[18-1c]----00.0-[19-1c]--+-00.0-[1a]----00.0",
        " |           |                               \\-01.0-[1c]----00.0",
        " |           +-02.0-[16-1d]----00.0-[17-1d]--+-00.0-[1b]----00.0",
        " |           |                               \\-01.0-[1d]----00.0",
        " |           +-03.0-[48-4c]----00.0-[49-4c]--+-00.0-[4a]----00.0",
        " |           |                               \\-01.0-[4c]----00.0",
        " |           \\-04.0-[46-4d]----00.0-[47-4d]--+-00.0-[4b]----00.0",
        " |                                           \\-01.0-[4d]----00.0",
        " \\-[0000:80]-+-01.0-[88-8c]----00.0-[89-8c]--+-00.0-[8a]----00.0",
        "             |                               \\-01.0-[8c]----00.0",
        "             +-02.0-[86-8d]----00.0-[87-8d]--+-00.0-[8b]----00.0",
        "             |                               \\-01.0-[8d]----00.0",
        "             +-03.0-[c8-cc]----00.0-[c9-cc]--+-00.0-[ca]----00.0",
        "             |                               \\-01.0-[cc]----00.0",
        "             \\-04.0-[c6-cd]----00.0-[c7-cd]--+-00.0-[cb]----00.0",
        "                                             \\-01.0-[cd]----00.0"])
