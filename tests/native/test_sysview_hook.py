"""The proc hook's /sys view, run as runc runs it: in a mount namespace of its own against a
scratch rootfs (its own sysfs, proc and /dev), with a hand-built staged overlay. What a Go
program reads there (gpu-feature-discovery's class file, mig-parted's walk of
/sys/bus/pci/devices, the validator's /sys/module) is read from inside the same namespace
by one shell script; the host's mounts (/sys and the scratch folder) are compared before and after.

GPU 0 and GPU 1 are staged; the rootfs holds only /dev/nvidia0, so only GPU 0 may show.
The overlay's own path holds ':' and ',' (overlayfs's separators) on purpose.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

UNSHARE = shutil.which("unshare")

GPU0 = "0000:00:1e.0"           # under the kernel's own root complex: the two merge
GPU1 = "0000:86:00.0"
MODULE_LINES = ("nvidia_uvm 1540096 0 - Live 0x0000000000000000\n"
                "nvidia 56954880 1 nvidia_uvm, Live 0x0000000000000000\n")
DEVICE_LINES = "195 nvidia\n510 nvidia-uvm\n"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or UNSHARE is None,
                                reason="mount namespaces need root and util-linux's unshare")


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def stage_gpu(overlay: str, minor: int, root_complex: str, bus_id: str) -> None:
    gpu = os.path.join(overlay, "sysview", "gpu", str(minor))
    device = os.path.join(gpu, "devices", root_complex, bus_id)
    for name, value in (("vendor", "0x10de"), ("device", "0x2330"), ("class", "0x030200"),
                        ("numa_node", "0")):
        write(os.path.join(device, name), value + "\n")
    os.symlink("../../../bus/pci/drivers/nvidia", os.path.join(device, "driver"))
    os.makedirs(os.path.join(gpu, "bus", "pci", "devices"))
    os.symlink(f"../../../devices/{root_complex}/{bus_id}", os.path.join(gpu, "bus", "pci", "devices", bus_id))
    os.makedirs(os.path.join(gpu, "bus", "pci", "drivers", "nvidia"))
    os.symlink(f"../../../../devices/{root_complex}/{bus_id}",
               os.path.join(gpu, "bus", "pci", "drivers", "nvidia", bus_id))


@pytest.fixture
def scratch(tmp_path):
    """(overlay, rootfs, bundle): the staged overlay, an empty rootfs, and an OCI bundle
    whose config.json names the rootfs."""
    overlay = str(tmp_path / "over:lay,x")
    stage_gpu(overlay, 0, "pci0000:00", GPU0)
    stage_gpu(overlay, 1, "pci0000:86", GPU1)
    write(os.path.join(overlay, "sysview", "module", "nvidia", "version"), "550.54.15\n")
    write(os.path.join(overlay, "sysview", "module", "nvidia", "initstate"), "live\n")
    write(os.path.join(overlay, "sysview", "proc-modules"), MODULE_LINES)
    write(os.path.join(overlay, "sysview", "proc-devices"), DEVICE_LINES)
    write(os.path.join(overlay, "driver", "proc", "driver", "nvidia", "version"), "NVRM version: 550.54.15\n")
    rootfs = tmp_path / "bundle" / "rootfs"
    for name in ("sys", "proc", "dev"):
        (rootfs / name).mkdir(parents=True)
    write(str(tmp_path / "bundle" / "config.json"), json.dumps({"root": {"path": "rootfs"}}))
    return overlay, str(rootfs), str(tmp_path / "bundle")


#: Before each test's own lines: the container's mounts as runc leaves them when
#: createContainer hooks run, a peer of its /sys that must not see the hook's mounts, and
#: `show LABEL CMD...`, which prints "@@LABEL <exit code>" and what CMD wrote.
PRELUDE = r"""
set -u
H=$1 O=$2 R=$3 B=$4
mount -t sysfs sysfs "$R/sys" && mount -t proc proc "$R/proc" || exit 90
mount --make-shared "$R/sys" && mkdir -p "$B/peer" && mount --bind "$R/sys" "$B/peer" || exit 91
show() { label=$1; shift; out=$("$@" 2>&1); rc=$?; echo "@@$label $rc"; printf '%s\n' "$out"; }
hook() { show "$1" sh -c "echo '{\"bundle\": \"$B\"}' | \"$H\" \"$O\""; }
fstype() { stat -f -c %T "$1"; }
"""


def run(hook: str, scratch, body: str) -> dict[str, tuple[int, str]]:
    """Runs PRELUDE and ``body`` in a new mount namespace; what each `show` printed, by label."""
    overlay, rootfs, bundle = scratch
    script = os.path.join(bundle, "inside.sh")
    write(script, PRELUDE + body)
    argv = [UNSHARE, "-m", "--propagation", "private", "sh", script, hook, overlay, rootfs, bundle]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
    shown: dict[str, tuple[int, str]] = {}
    label = None
    for line in done.stdout.splitlines():
        if line.startswith("@@"):
            label, rc = line[2:].rsplit(" ", 1)
            shown[label] = (int(rc), "")
        elif label is not None:
            rc, text = shown[label]
            shown[label] = (rc, text + line + "\n")
    return {k: (rc, text.rstrip("\n")) for k, (rc, text) in shown.items()}


def host_mounts(scratch) -> list[str]:
    """The host's mounts at or under /sys and the scratch folder (other tests mount elsewhere)."""
    within = ("/sys", os.path.dirname(scratch[2]))
    with open("/proc/self/mountinfo") as f:
        lines = f.read().splitlines()
    return [line for line in lines
            if any(line.split()[4] == top or line.split()[4].startswith(top + "/") for top in within)]


@pytest.fixture
def hook(native_libs) -> str:
    return native_libs.path("prochook")


def test_a_gpu_container_sees_its_gpus_pci_tree_and_modules_read_only(hook, scratch):
    host_before = host_mounts(scratch)
    host_pci = sorted(os.listdir("/sys/bus/pci/devices"))
    shown = run(hook, scratch, r"""
mknod "$R/dev/nvidia0" c 195 0
hook hook
show devices ls "$R/sys/bus/pci/devices"
show class cat "$R/sys/bus/pci/devices/%(gpu0)s/class"
show vendor cat "$R/sys/bus/pci/devices/%(gpu0)s/vendor"
show driver readlink -f "$R/sys/bus/pci/devices/%(gpu0)s/driver"
show by-driver cat "$R/sys/bus/pci/drivers/nvidia/%(gpu0)s/numa_node"
show root-complex ls "$R/sys/devices/pci0000:00"
show version cat "$R/sys/module/nvidia/version"
show modules ls "$R/sys/module"
show write-class sh -c "echo 0 > '$R/sys/bus/pci/devices/%(gpu0)s/class'"
show new-file touch "$R/sys/bus/pci/devices/x"
show new-dir mkdir "$R/sys/module/x"
show peer fstype "$B/peer/devices"
show proc-version cat "$R/proc/driver/nvidia/version"
show proc-modules cat "$R/proc/modules"
show proc-devices cat "$R/proc/devices"
""" % {"gpu0": GPU0})
    assert shown["hook"][0] == 0 and shown["hook"][1] == ""
    devices = shown["devices"][1].split()
    assert GPU0 in devices and GPU1 not in devices
    assert set(host_pci) <= set(devices)                     # the kernel's own entries stay
    assert shown["class"] == (0, "0x030200")
    assert shown["vendor"] == (0, "0x10de")
    assert shown["driver"][1].endswith("/sys/bus/pci/drivers/nvidia")
    assert shown["by-driver"] == (0, "0")
    assert {"0000:00:00.0", GPU0} <= set(shown["root-complex"][1].split())
    assert shown["version"] == (0, "550.54.15")
    assert {"nvidia", "block"} <= set(shown["modules"][1].split())
    for refused in ("write-class", "new-file", "new-dir"):
        assert shown[refused][0] != 0 and "Read-only file system" in shown[refused][1], refused
    assert shown["peer"] == (0, "sysfs")                     # nothing propagated out of /sys
    assert shown["proc-version"] == (0, "NVRM version: 550.54.15")
    if os.path.exists("/proc/modules"):
        assert shown["proc-modules"][1].endswith(MODULE_LINES.rstrip("\n"))
    else:                                                    # the hook makes no file the kernel lacks
        assert shown["proc-modules"][0] != 0
    # This kernel's own /proc/devices, the driver's lines closing its character devices.
    chars, _, blocks = shown["proc-devices"][1].partition("\n\nBlock devices:\n")
    assert chars.endswith("\n195 nvidia\n510 nvidia-uvm") and blocks
    assert host_mounts(scratch) == host_before and host_before
    assert sorted(os.listdir("/sys/bus/pci/devices")) == host_pci


def test_no_gpu_node_gives_no_sys_mounts(hook, scratch):
    shown = run(hook, scratch, r"""
hook hook
show types sh -c 'for d in devices bus module; do stat -f -c %T "$0/sys/$d"; done' "$R"
show devices ls "$R/sys/bus/pci/devices"
""")
    assert shown["hook"][0] == 0
    assert shown["types"] == (0, "sysfs\nsysfs\nsysfs")
    assert GPU0 not in shown["devices"][1].split()


def test_a_link_planted_at_dev_nvidia0_is_not_followed(hook, scratch):
    shown = run(hook, scratch, r"""
mkdir "$R/elsewhere" && mknod "$R/elsewhere/gpu" c 195 0 && ln -s ../elsewhere/gpu "$R/dev/nvidia0"
hook hook
show type fstype "$R/sys/devices"
""")
    assert shown["hook"][0] == 0
    assert "nvidia0 is not the char device 195:0" in shown["hook"][1]
    assert shown["type"] == (0, "sysfs")


def test_a_node_of_another_minor_is_not_a_gpu(hook, scratch):
    shown = run(hook, scratch, r"""
mknod "$R/dev/nvidia0" c 195 1
hook hook
show type fstype "$R/sys/devices"
""")
    assert "nvidia0 is not the char device 195:0" in shown["hook"][1]
    assert shown["type"] == (0, "sysfs")


def test_a_link_planted_at_sys_is_not_followed(hook, scratch):
    shown = run(hook, scratch, r"""
mknod "$R/dev/nvidia0" c 195 0
umount "$B/peer" && umount "$R/sys" && rmdir "$R/sys"
mkdir "$R/realsys" && mount -t sysfs sysfs "$R/realsys" && ln -s realsys "$R/sys"
hook hook
show type fstype "$R/realsys/devices"
""")
    assert shown["hook"][0] == 0
    assert "/sys: " in shown["hook"][1] and "no /sys view" in shown["hook"][1]
    assert shown["type"] == (0, "sysfs")


def test_the_hook_given_twice_gives_the_same_view(hook, scratch):
    shown = run(hook, scratch, r"""
mknod "$R/dev/nvidia0" c 195 0
hook first
show mounts-first sh -c 'grep -c "$0/" /proc/self/mountinfo' "$R"
show view-first ls -R "$R/sys/bus/pci" "$R/sys/module/nvidia" "$R/proc/driver"
hook second
show mounts-second sh -c 'grep -c "$0/" /proc/self/mountinfo' "$R"
show view-second ls -R "$R/sys/bus/pci" "$R/sys/module/nvidia" "$R/proc/driver"
""")
    for run_ in ("first", "second"):
        assert shown[run_][0] == 0 and shown[run_][1] == ""
    assert shown["mounts-second"] == shown["mounts-first"]
    assert shown["view-second"] == shown["view-first"] and GPU0 in shown["view-first"][1]


def test_the_rootfs_form_gives_the_view_with_no_oci_state(hook, scratch):
    """`mokka exec`'s form: ``OVERLAY ROOTFS`` with ROOTFS "/" inside the namespace (here a
    chroot into the scratch rootfs, whose /proc is a mount of its own)."""
    shown = run(hook, scratch, r"""
mknod "$R/dev/nvidia0" c 195 0
mkdir "$R/overlay" "$R/bin" && mount --bind "$O" "$R/overlay" && cp "$H" "$R/bin/hook"
show hook chroot "$R" /bin/hook /overlay / </dev/null
show class cat "$R/sys/bus/pci/devices/%(gpu0)s/class"
show devices ls "$R/sys/bus/pci/devices"
show proc-version cat "$R/proc/driver/nvidia/version"
""" % {"gpu0": GPU0})
    assert shown["hook"][0] == 0 and shown["hook"][1] == ""
    assert shown["class"] == (0, "0x030200")
    assert GPU1 not in shown["devices"][1].split()
    assert shown["proc-version"] == (0, "NVRM version: 550.54.15")


#: A /proc whose kernel has module support, for a kernel that has none (this one): a ramfs
#: at <rootfs>/proc holding driver/ and the bundle's kernel-modules and kernel-devices as
#: the kernel's modules and devices files.
KERNEL_PROC = r"""
umount "$R/proc" && mount -t ramfs ramfs "$R/proc" && mkdir "$R/proc/driver" || exit 92
for f in modules devices; do [ ! -e "$B/kernel-$f" ] || cp "$B/kernel-$f" "$R/proc/$f" || exit 93; done
"""


def kernel_proc(scratch, modules: str | None = None, devices: str | None = None) -> str:
    for name, text in (("modules", modules), ("devices", devices)):
        if text is not None:
            write(os.path.join(scratch[2], f"kernel-{name}"), text)
    return KERNEL_PROC


@pytest.mark.parametrize("kernel_line, staged, expected", [
    ("ext4 1 0 - Live 0x0", True, "ext4 1 0 - Live 0x0\n" + MODULE_LINES),
    ("ext4 1 0 - Live 0x0", False, "ext4 1 0 - Live 0x0\n"),
    ("nvidia 9 0 - Live 0x0", True, "nvidia 9 0 - Live 0x0\n"),      # a real driver's: as it is
], ids=["staged lines added", "none staged", "a driver loaded"])
def test_proc_modules_gains_the_staged_lines_where_the_kernel_has_it(hook, scratch, kernel_line, staged, expected):
    if not staged:
        os.unlink(os.path.join(scratch[0], "sysview", "proc-modules"))
    shown = run(hook, scratch, kernel_proc(scratch, modules=kernel_line + "\n") + r"""
hook first
show modules cat "$R/proc/modules"
hook second
show again cat "$R/proc/modules"
show write sh -c 'echo x >> "$0/proc/modules"' "$R"
show driver ls -A "$R/proc/driver"
show mkdir mkdir "$R/proc/driver/x"
""")
    assert shown["modules"] == (0, expected.rstrip("\n"))
    assert shown["again"] == shown["modules"]
    assert shown["second"] == (0, "")
    if staged and not kernel_line.startswith("nvidia "):
        assert shown["first"] == (0, "") and "Read-only file system" in shown["write"][1]
    elif not staged:
        assert "no staged module lines" in shown["first"][1] and "proc-modules" in shown["first"][1]
    # /proc/driver holds the driver's directory only, and stays read-only (no copy left behind).
    assert shown["driver"] == (0, "nvidia")
    assert shown["mkdir"][0] != 0 and "Read-only file system" in shown["mkdir"][1]


KERNEL_DEVICES = ("Character devices:\n"
                  "  1 mem\n"
                  " 10 misc\n"
                  "\n"
                  "Block devices:\n"
                  "  7 loop\n")


@pytest.mark.parametrize("kernel, staged, expected", [
    (KERNEL_DEVICES, True, ("Character devices:\n"
                            "  1 mem\n"
                            " 10 misc\n"
                            "195 nvidia\n"
                            "510 nvidia-uvm\n"
                            "\n"
                            "Block devices:\n"
                            "  7 loop\n")),
    (KERNEL_DEVICES, False, KERNEL_DEVICES),
    ("Character devices:\n  1 mem\n195 nvidia\n\nBlock devices:\n  7 loop\n", True,
     "Character devices:\n  1 mem\n195 nvidia\n\nBlock devices:\n  7 loop\n"),
    ("Character devices:\n  1 mem\n195 nvidia-frontend\n\nBlock devices:\n", True,
     "Character devices:\n  1 mem\n195 nvidia-frontend\n\nBlock devices:\n"),
], ids=["staged lines close the character devices", "none staged", "a driver loaded",
        "an older driver loaded"])
def test_proc_devices_gains_the_staged_char_devices(hook, scratch, kernel, staged, expected):
    if not staged:
        os.unlink(os.path.join(scratch[0], "sysview", "proc-devices"))
    shown = run(hook, scratch, kernel_proc(scratch, modules="ext4 1 0 - Live 0x0\n", devices=kernel) + r"""
hook first
show devices cat "$R/proc/devices"
hook second
show again cat "$R/proc/devices"
show write sh -c 'echo "1 x" >> "$0/proc/devices"' "$R"
show modules cat "$R/proc/modules"
show driver ls -A "$R/proc/driver"
""")
    assert shown["devices"] == (0, expected.rstrip("\n"))
    assert shown["again"] == shown["devices"] and shown["second"] == (0, "")
    if staged and expected != kernel:
        assert shown["first"] == (0, "") and "Read-only file system" in shown["write"][1]
    elif not staged:
        assert shown["first"][1].count("\n") == 0 and "no staged char device lines" in shown["first"][1]
        assert "proc-devices" in shown["first"][1]
    else:
        assert shown["first"] == (0, "")
    # /proc/modules gets its lines beside, and both scratch copies are gone.
    assert shown["modules"] == (0, "ext4 1 0 - Live 0x0\n" + MODULE_LINES.rstrip("\n"))
    assert shown["driver"] == (0, "nvidia")


def test_a_kernel_without_proc_modules_gets_none_and_no_word(hook, scratch):
    shown = run(hook, scratch, kernel_proc(scratch, devices=KERNEL_DEVICES) + r"""
hook hook
show modules test -e "$R/proc/modules"
show devices grep -x "195 nvidia" "$R/proc/devices"
""")
    assert shown["hook"] == (0, "")
    assert shown["modules"][0] != 0
    assert shown["devices"] == (0, "195 nvidia")       # /proc/devices is given all the same


# --- InfiniBand: the HCAs' PCI functions, merged into a GPU container that selects it -------
# Two staged HCAs, as the node agent stages them (sysview/hca/<n>): mlx5_0 beside GPU 0 under
# the kernel's root complex, mlx5_1 beside GPU 1 (which the container does not see: HCAs come
# whole, GPU 1's is still the node's).
HCA0 = "0000:1c:00.0"
HCA1 = "0000:88:00.0"


def stage_hca(overlay: str, index: int, root_complex: str, bdf: str) -> None:
    hca = os.path.join(overlay, "sysview", "hca", str(index))
    device = os.path.join(hca, "devices", root_complex, bdf)
    for name, value in (("vendor", "0x15b3"), ("device", "0x1021"), ("class", "0x020700"),
                        ("numa_node", "0")):
        write(os.path.join(device, name), value + "\n")
    os.symlink("../../../bus/pci/drivers/mlx5_core", os.path.join(device, "driver"))
    os.makedirs(os.path.join(hca, "bus", "pci", "devices"))
    os.symlink(f"../../../devices/{root_complex}/{bdf}", os.path.join(hca, "bus", "pci", "devices", bdf))
    os.makedirs(os.path.join(hca, "bus", "pci", "drivers", "mlx5_core"))
    os.symlink(f"../../../../devices/{root_complex}/{bdf}",
               os.path.join(hca, "bus", "pci", "drivers", "mlx5_core", bdf))


def with_env(scratch, env) -> None:
    """config.json with ``env`` as process.env (a list, or raw JSON text for the array)."""
    array = env if isinstance(env, str) else json.dumps(env)
    write(os.path.join(scratch[2], "config.json"),
          '{"root": {"path": "rootfs"}, "process": {"args": ["sh"], "env": %s, "cwd": "/"}}' % array)


@pytest.fixture
def hca_scratch(scratch):
    stage_hca(scratch[0], 0, "pci0000:00", HCA0)
    stage_hca(scratch[0], 1, "pci0000:86", HCA1)
    return scratch


HCA_VIEW = r"""
show devices ls "$R/sys/bus/pci/devices"
show vendor cat "$R/sys/bus/pci/devices/0000:1c:00.0/vendor"
show class cat "$R/sys/bus/pci/devices/0000:1c:00.0/class"
show device cat "$R/sys/bus/pci/devices/0000:1c:00.0/device"
show driver readlink -f "$R/sys/bus/pci/devices/0000:1c:00.0/driver"
show by-driver ls "$R/sys/bus/pci/drivers/mlx5_core"
show second-class cat "$R/sys/bus/pci/devices/0000:88:00.0/class"
show gpu-class cat "$R/sys/bus/pci/devices/0000:00:1e.0/class"
show write sh -c "echo 0 > '$R/sys/bus/pci/devices/0000:1c:00.0/class'"
"""


@pytest.mark.parametrize("env", [
    ["PATH=/bin", "MOCK_IB=full"],
    ["MOCK_IB=sysfs"],
    ["MOCK_IB=off", "PATH=/bin", "MOCK_IB=full"],   # runc keeps the last of a repeated key
    ["MOCK_IB=" + "x" * 300, "MOCK_IB=full"],
], ids=["full", "sysfs", "last of two", "after an overlong one"])
def test_an_infiniband_gpu_container_sees_the_hcas_beside_its_gpu(hook, hca_scratch, env):
    with_env(hca_scratch, env)
    shown = run(hook, hca_scratch, 'mknod "$R/dev/nvidia0" c 195 0\nhook hook\n' + HCA_VIEW)
    assert shown["hook"] == (0, "")
    devices = shown["devices"][1].split()
    assert {"0000:00:1e.0", "0000:1c:00.0", "0000:88:00.0"} <= set(devices)
    assert "0000:86:00.0" not in devices                     # GPU 1 stays hidden
    assert shown["vendor"] == (0, "0x15b3")
    assert shown["class"] == (0, "0x020700")
    assert shown["device"] == (0, "0x1021")
    assert shown["driver"][1].endswith("/sys/bus/pci/drivers/mlx5_core")
    assert shown["by-driver"] == (0, "0000:1c:00.0\n0000:88:00.0")
    assert shown["second-class"] == (0, "0x020700")
    assert shown["gpu-class"] == (0, "0x030200")
    assert shown["write"][0] != 0 and "Read-only file system" in shown["write"][1]


@pytest.mark.parametrize("env", [
    ["MOCK_IB=off"],
    [],
    ["PATH=/bin"],
    ["MOCK_IB="],
    ["MOCK_IBX=full", "XMOCK_IB=full"],
    ["MOCK_IB=full", "MOCK_IB=off"],
], ids=["off", "no env", "unset", "empty", "other names", "last of two"])
def test_a_gpu_container_not_selecting_infiniband_sees_no_hca(hook, hca_scratch, env):
    with_env(hca_scratch, env)
    shown = run(hook, hca_scratch, 'mknod "$R/dev/nvidia0" c 195 0\nhook hook\n' + HCA_VIEW)
    assert shown["hook"] == (0, "")
    devices = shown["devices"][1].split()
    assert "0000:00:1e.0" in devices                         # the GPU view all the same
    assert "0000:1c:00.0" not in devices and "0000:88:00.0" not in devices
    assert shown["class"][0] != 0 and "No such file or directory" in shown["class"][1]
    assert shown["by-driver"][0] != 0
    assert shown["gpu-class"] == (0, "0x030200")


@pytest.mark.parametrize("env", [["MOCK_IB=full"], ["MOCK_IB=off"]], ids=["full", "off"])
def test_a_container_without_gpus_gets_no_mount_even_selecting_infiniband(hook, hca_scratch, env):
    with_env(hca_scratch, env)
    shown = run(hook, hca_scratch, r"""
hook hook
show types sh -c 'for d in devices bus module; do stat -f -c %T "$0/sys/$d"; done' "$R"
show class cat "$R/sys/bus/pci/devices/0000:1c:00.0/class"
show mounts sh -c 'grep -c " $0/sys/" /proc/self/mountinfo' "$R"
""")
    assert shown["hook"] == (0, "")
    assert shown["types"] == (0, "sysfs\nsysfs\nsysfs")
    assert shown["class"][0] != 0
    assert shown["mounts"] == (1, "0")                       # nothing mounted under /sys


@pytest.mark.parametrize("env", [
    '["MOCK_IB=' + "f" * 300 + '"]',                          # longer than the hook reads
    '["PATH=/bin" "MOCK_IB=full"]',                            # no comma before it
    '["PATH=/bin", ["MOCK_IB=full"]]',                         # inside a nested array
    '["MOCK_IB=full", 1 2]',                                   # malformed after the entry
    '["MOCK_IB=off", 12, {"MOCK_IB": "full"}]',                # not strings: not entries
    '{"MOCK_IB": "full"}',                                     # env not an array
    '"MOCK_IB=full"',                                          # nor a string
    '["MOCK_IB=full\\x"]',                                     # an invalid escape
], ids=["overlong", "no comma", "nested", "malformed after", "non-strings", "object", "string", "bad escape"])
def test_a_malformed_or_overlong_mock_ib_selects_nothing(hook, hca_scratch, env):
    with_env(hca_scratch, env)
    shown = run(hook, hca_scratch, 'mknod "$R/dev/nvidia0" c 195 0\nhook hook\n' + HCA_VIEW)
    devices = shown["devices"][1].split()
    assert "0000:1c:00.0" not in devices and "0000:88:00.0" not in devices
    assert shown["class"][0] != 0


def test_a_profile_without_hcas_gives_the_gpu_view_and_one_line(hook, scratch):
    with_env(scratch, ["MOCK_IB=full"])
    shown = run(hook, scratch, 'mknod "$R/dev/nvidia0" c 195 0\nhook hook\n' + HCA_VIEW)
    assert shown["hook"][0] == 0
    assert "InfiniBand is selected but" in shown["hook"][1] and "has no HCA view" in shown["hook"][1]
    assert shown["hook"][1].count("\n") == 0
    assert shown["gpu-class"] == (0, "0x030200")
    assert shown["class"][0] != 0


@pytest.mark.parametrize("ib, seen", [("full", True), ("off", False), (None, False)],
                         ids=["full", "off", "unset"])
def test_the_rootfs_form_reads_mock_ib_from_its_own_environment(hook, hca_scratch, ib, seen):
    """`mokka exec`'s form: no config.json, so the hook's own environment decides."""
    with_env(hca_scratch, ["MOCK_IB=full"])                  # not read in this form
    env = "env -i" + (f" MOCK_IB={ib}" if ib else "") + " \"$(command -v chroot)\""
    shown = run(hook, hca_scratch, r"""
mknod "$R/dev/nvidia0" c 195 0
mkdir "$R/overlay" "$R/bin" && mount --bind "$O" "$R/overlay" && cp "$H" "$R/bin/hook"
show hook %s "$R" /bin/hook /overlay / </dev/null
show class cat "$R/sys/bus/pci/devices/0000:1c:00.0/class"
show gpu-class cat "$R/sys/bus/pci/devices/0000:00:1e.0/class"
""" % env)
    assert shown["hook"] == (0, "")
    assert shown["gpu-class"] == (0, "0x030200")
    assert (shown["class"] == (0, "0x020700")) is seen, shown["class"]


# --- Bridges: two selected GPUs behind one PCIe switch ---------------------------------------
# GPUs 2 and 3 on two downstream ports (1b:00.0, 1b:01.0) of one switch (upstream 1a:00.0)
# under root port 00:1c.0, staged as the agent stages them: each GPU's lower holds its own
# chain, so the switch's directories are in both lowers and the overlay merges them.
SWITCH = "pci0000:00/0000:00:1c.0/0000:1a:00.0"
GPU2, GPU3 = "0000:1c:00.0", "0000:1d:00.0"
BRIDGE_ATTRS = (("vendor", "0x1000"), ("device", "0xc030"), ("class", "0x060400"), ("numa_node", "0"))


def stage_behind(overlay: str, minor: int, port: str, bdf: str) -> None:
    """GPU ``minor`` at ``bdf`` behind the downstream port ``port`` of SWITCH, with every
    bridge of its chain and the bus links, in sysview/gpu/<minor>."""
    view = os.path.join(overlay, "sysview", "gpu", str(minor))
    parts = SWITCH.split("/")[1:] + [port]
    for k, bridge in enumerate(parts):
        path = "/".join([SWITCH.split("/")[0], *parts[:k + 1]])
        for name, value in BRIDGE_ATTRS:
            write(os.path.join(view, "devices", path, name), value + "\n")
        link = os.path.join(view, "bus", "pci", "devices", bridge)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(f"../../../devices/{path}", link)
    path = "/".join([SWITCH, port, bdf])
    gpu_attrs = (("vendor", "0x10de"), ("device", "0x2330"), ("class", "0x030200"), ("numa_node", "0"))
    for name, value in gpu_attrs:
        write(os.path.join(view, "devices", path, name), value + "\n")
    os.symlink(f"../../../devices/{path}", os.path.join(view, "bus", "pci", "devices", bdf))


@pytest.fixture
def switch_scratch(scratch):
    stage_behind(scratch[0], 2, "0000:1b:00.0", GPU2)
    stage_behind(scratch[0], 3, "0000:1b:01.0", GPU3)
    return scratch


SWITCH_VIEW = r"""
hook hook
show devices ls "$R/sys/bus/pci/devices"
show ports ls "$R/sys/devices/%(switch)s"
show gpu2 readlink -f "$R/sys/bus/pci/devices/%(gpu2)s"
show gpu3 readlink -f "$R/sys/bus/pci/devices/%(gpu3)s"
show class2 cat "$R/sys/bus/pci/devices/%(gpu2)s/class"
show class3 cat "$R/sys/bus/pci/devices/%(gpu3)s/class"
show switch-class cat "$R/sys/bus/pci/devices/0000:1a:00.0/class"
show port-class cat "$R/sys/bus/pci/devices/0000:1b:01.0/class"
show root-port readlink "$R/sys/bus/pci/devices/0000:00:1c.0"
""" % {"switch": SWITCH, "gpu2": GPU2, "gpu3": GPU3}


def test_two_gpus_behind_one_switch_merge_into_one_tree(hook, switch_scratch):
    shown = run(hook, switch_scratch, 'mknod "$R/dev/nvidia2" c 195 2\nmknod "$R/dev/nvidia3" c 195 3\n'
                + SWITCH_VIEW)
    assert shown["hook"] == (0, "")
    devices = shown["devices"][1].split()
    assert {"0000:00:1c.0", "0000:1a:00.0", "0000:1b:00.0", "0000:1b:01.0", GPU2, GPU3} <= set(devices)
    assert GPU0 not in devices and GPU1 not in devices
    # One switch directory holding both downstream ports, each GPU under its own.
    assert shown["ports"][1].split() == ["0000:1b:00.0", "0000:1b:01.0", "class", "device", "numa_node",
                                         "vendor"]
    sys_devices = shown["gpu2"][1][:shown["gpu2"][1].index("/sys/devices/") + len("/sys/devices/")]
    assert shown["gpu2"] == (0, sys_devices + "pci0000:00/0000:00:1c.0/0000:1a:00.0/0000:1b:00.0/" + GPU2)
    assert shown["gpu3"] == (0, sys_devices + "pci0000:00/0000:00:1c.0/0000:1a:00.0/0000:1b:01.0/" + GPU3)
    assert shown["class2"] == shown["class3"] == (0, "0x030200")
    assert shown["switch-class"] == shown["port-class"] == (0, "0x060400")
    assert shown["root-port"] == (0, "../../../devices/pci0000:00/0000:00:1c.0")


def test_one_gpu_behind_a_shared_switch_shows_only_its_own_port(hook, switch_scratch):
    shown = run(hook, switch_scratch, 'mknod "$R/dev/nvidia3" c 195 3\n' + SWITCH_VIEW)
    assert shown["hook"] == (0, "")
    devices = shown["devices"][1].split()
    assert {"0000:00:1c.0", "0000:1a:00.0", "0000:1b:01.0", GPU3} <= set(devices)
    assert GPU2 not in devices and "0000:1b:00.0" not in devices
    assert shown["ports"][1].split() == ["0000:1b:01.0", "class", "device", "numa_node", "vendor"]
    assert shown["class3"] == (0, "0x030200")
