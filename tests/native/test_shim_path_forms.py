"""The path shims decide on a path's lexical normal form: every spelling of a
redirected path ("//", "/./", "..", relative to the working directory or to an
*at call's directory fd) reads the mock root's view or fails with ENOENT, never
the host's tree, and no redirected path climbs out of the root. With the
variables unset every call, a NULL path included, behaves as without the
preload. Driven by real commands (cat, stat, ls, sh, python) and the C probe
over a scratch tree unlike the host's /sys."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

import pytest

from mokka.core import names
from tests.native.ibnode import shim_libs  # noqa: F401 (fixture)
from tests.native.pathprobe import FLAVOURS, no_shims, probes, report  # noqa: F401 (fixture)
from tests.native.test_path_shims import preload, sanitizer_env

DEVICE = "0000:ee:1f.7"                 # a PCI address the host does not have
HCA = "mlx5_9"


def host_device() -> str:
    """A PCI device the host has (if it has any): the mock has none of its files."""
    try:
        found = sorted(os.listdir("/sys/bus/pci/devices"))
    except OSError:
        found = []
    return found[0] if found else "0000:00:00.0"


HOST_DEVICE = host_device()
VENDOR = f"/sys/bus/pci/devices/{DEVICE}/vendor"
FW = f"/sys/class/infiniband/{HCA}/fw_ver"
LINK = f"../../../devices/pci0000:00/{DEVICE}"
XATTR = "user.mokka"
#: The calls that resolve a relative path against their directory fd.
AT_CALLS = ("openat", "fstatat", "statx", "faccessat", "readlinkat")


@dataclass(frozen=True)
class Tree:
    """A mock PCI root and IB root under `base`, with a decoy at base/etc/passwd:
    where root/../etc/passwd lands, so a path escaping either root reads it."""
    base: str
    pci: str
    ib: str
    libs: dict

    def env(self) -> dict:
        return {"LD_PRELOAD": preload(self.libs[names.IB_SYS_LIB_FILE], self.libs[names.FS_LIB_FILE]),
                names.ENV_PCI_ROOT: self.pci, names.ENV_IB: names.IB_SYSFS, names.ENV_IB_ROOT: self.ib}

    def unset_env(self) -> dict:
        """The shims preloaded, none of their variables set."""
        return {"LD_PRELOAD": self.env()["LD_PRELOAD"]}

    def real(self, where: str, path: str) -> str:
        """What a view path means: under the PCI root, the IB root, or the host's own."""
        return {"pci": self.pci, "ib": self.ib, "host": ""}[where] + path


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


@pytest.fixture(scope="module")
def tree(tmp_path_factory, shim_libs) -> Tree:
    assert not os.path.lexists(f"/sys/bus/pci/devices/{DEVICE}"), "the host has the scratch device"
    assert not os.path.lexists(f"/sys/class/infiniband/{HCA}"), "the host has the scratch HCA"
    base = str(tmp_path_factory.mktemp("forms") / "a" / "b")
    pci, ib = os.path.join(base, "pci"), os.path.join(base, "ib")
    device = f"{pci}/sys/devices/pci0000:00/{DEVICE}"
    write(f"{device}/vendor", "0xmock\n")
    write(f"{device}/numa_node", "1\n")
    os.makedirs(f"{pci}/sys/bus/pci/devices")
    os.symlink(LINK, f"{pci}/sys/bus/pci/devices/{DEVICE}")
    write(ib + FW, "99.1.2\n")
    write(ib + UVERBS, "mock uverbs\n")
    write(f"{base}/etc/passwd", "escaped\n")
    return Tree(base, pci, ib, shim_libs)


def run(argv: list[str], env: dict, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=cwd,
                          env={"PATH": os.environ["PATH"], **env, **sanitizer_env()})


def host_passwd() -> str:
    with open("/etc/passwd", encoding="utf-8") as f:
        return f.read()


# --------------------------------------------------------------- real commands

UVERBS = "/dev/infiniband/uverbs9"
#: A spelling -> (the root it reads, the path it means there, its content).
SPELLINGS = {
    "'//' inside": (f"/sys//bus/pci/devices//{DEVICE}/vendor", "pci", VENDOR, "0xmock"),
    "'//' leading": (f"//sys/bus/pci/devices/{DEVICE}/vendor", "pci", VENDOR, "0xmock"),
    "'/./'": (f"/sys/./bus/pci/./devices/{DEVICE}/./vendor", "pci", VENDOR, "0xmock"),
    "'..' back into the prefix": (f"/sys/bus/../bus/pci/devices/{DEVICE}/vendor", "pci", VENDOR, "0xmock"),
    "'..' from another /sys directory": (f"/sys/class/../bus/pci/devices/{DEVICE}/vendor", "pci", VENDOR,
                                         "0xmock"),
    "IB '//'": (f"/sys/class//infiniband/{HCA}/fw_ver", "ib", FW, "99.1.2"),
    "IB '..' back in": (f"/sys/class/net/../infiniband/{HCA}/fw_ver", "ib", FW, "99.1.2"),
    "/dev//infiniband": ("/dev//infiniband/uverbs9", "ib", UVERBS, "mock uverbs"),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_every_spelling_of_a_redirected_path_reads_the_mock(tree, spelling):
    path, where, meaning, content = SPELLINGS[spelling]
    done = run(["cat", path], tree.env())
    assert (done.returncode, done.stdout) == (0, content + "\n"), done.stderr
    done = run(["stat", "-L", "-c", "%i", path], tree.env())
    assert done.stdout == f"{os.stat(tree.real(where, meaning)).st_ino}\n", done.stderr


def test_ls_of_a_doubled_slash_lists_the_mock_devices_only(tree):
    for path in ("/sys//bus/pci/devices", "/sys/bus/pci/devices/", "/sys/bus/../bus/pci/devices/."):
        done = run(["ls", path], tree.env())
        assert (done.returncode, done.stdout) == (0, DEVICE + "\n"), (path, done.stderr)


@pytest.mark.parametrize("cwd, path, content", [
    ("/sys", f"bus/pci/devices/{DEVICE}/vendor", "0xmock"),
    ("/sys/bus", f"./pci//devices/{DEVICE}/vendor", "0xmock"),
    ("/", f"sys/bus/pci/devices/{DEVICE}/vendor", "0xmock"),
    ("/sys/class", f"infiniband/{HCA}/fw_ver", "99.1.2"),
    ("/dev", "infiniband/uverbs9", "mock uverbs"),
], ids=["in the host's /sys", "in /sys/bus, with ./ and //", "in /", "IB in /sys/class", "in /dev"])
def test_a_relative_path_resolves_against_the_working_directory(tree, cwd, path, content):
    done = run(["cat", path], tree.env(), cwd=cwd)
    assert (done.returncode, done.stdout) == (0, content + "\n"), done.stderr


def test_ls_in_the_hosts_sys_lists_the_mock_devices(tree):
    done = run(["ls", "bus/pci/devices"], tree.env(), cwd="/sys")
    assert (done.returncode, done.stdout) == (0, DEVICE + "\n"), done.stderr


@pytest.mark.parametrize("path", [
    "/sys/bus/pci/../../../../etc/passwd",
    f"/sys/bus/pci/devices/{DEVICE}/../../../../../etc/passwd",
    "/sys/class/infiniband/../../../etc/passwd",
    "/dev/infiniband/../../etc/passwd",
], ids=["out of /sys/bus/pci", "out past the device symlink", "out of /sys/class/infiniband",
        "out of /dev/infiniband"])
def test_dotdot_out_of_a_prefix_is_the_hosts_path_never_outside_the_root(tree, path):
    done = run(["cat", path], tree.env())
    assert (done.returncode, done.stdout) == (0, host_passwd()), done.stderr


def test_a_path_inside_the_root_is_left_as_written(tree):
    """The control for the decoy: the root's own path, climbing out, is the caller's
    choice and reads base/etc/passwd, as without the shims."""
    done = run(["cat", f"{tree.pci}/sys/bus/pci/../../../../etc/passwd"], tree.env())
    assert done.stdout == "escaped\n", done.stderr


@pytest.mark.parametrize("script, out", [
    ("cd /sys/bus/pci && cat ../../../../etc/passwd", None),
    ("cd /sys/bus/pci/devices && cat " + DEVICE + "/vendor", "0xmock\n"),
    ("cd /sys/bus/pci && ls devices", DEVICE + "\n"),
    ("cd /sys/class/infiniband && ls", HCA + "\n"),
    ("cd /sys/class/infiniband && cat ../../bus/pci/devices/" + DEVICE + "/vendor", "0xmock\n"),
], ids=["'..' after cd into the mock climbs the view", "relative after cd into the mock",
        "ls after cd into the mock", "ls after cd into the IB mock",
        "from the IB view into the PCI view"])
def test_after_cd_into_a_redirected_directory(tree, script, out):
    done = run(["sh", "-c", script], tree.env())
    assert (done.returncode, done.stdout) == (0, out or host_passwd()), done.stderr


def test_dotdot_from_a_deleted_working_directory_fails_with_enoent(tree, tmp_path):
    """Where a deleted directory was cannot be read: a path climbing out of it fails
    rather than go where the kernel's walk would (without the variables it does)."""
    write(str(tmp_path / "f"), "beside\n")
    script = f"cd {tmp_path} && mkdir gone && cd gone && rmdir ../gone && cat ../f"
    done = run(["sh", "-c", script], tree.env())
    assert done.returncode != 0 and "No such file or directory" in done.stderr, done
    done = run(["sh", "-c", script.replace("mkdir gone", "rm -rf gone && mkdir gone")], tree.unset_env())
    assert (done.returncode, done.stdout) == (0, "beside\n"), done.stderr


def test_python_os_calls_after_chdir_into_the_mock(tree):
    code = ("import os\n"
            "os.chdir('/sys/bus/pci')\n"
            "print(os.listdir('devices'))\n"
            "print(os.readlink('devices/%s'))\n"
            "print(open('devices/%s/vendor').read().strip())\n"
            "print(open('../../../../etc/passwd').read() == open('/etc/passwd').read())\n"
            "print(os.path.exists('devices/../../../bus/pci/devices/%s'))\n" % (DEVICE, DEVICE, DEVICE))
    done = run(["python3", "-c", code], tree.env())
    assert done.stdout.splitlines() == [f"['{DEVICE}']", LINK, "0xmock", "True", "True"], done.stderr


# --------------------------------------------------------------- ls -l and xattrs


def test_ls_l_of_a_redirected_directory_lists_every_entry(tree):
    done = run(["ls", "-l", "/sys/bus/pci/devices"], tree.env())
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1].endswith(f" {DEVICE} -> {LINK}"), done.stdout
    done = run(["ls", "-lL", f"/sys/bus/pci/devices/{DEVICE}"], tree.env())
    assert (done.returncode, done.stderr) == (0, "")
    assert [line.split()[-1] for line in done.stdout.splitlines()[1:]] == ["numa_node", "vendor"]
    done = run(["ls", "-l", "infiniband/" + HCA], tree.env(), cwd="/sys/class")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[-1].endswith(" fw_ver")


def test_xattr_calls_reach_the_mock_file(tree, probes):
    """Whatever the scratch filesystem answers for the mock file, the shims answer
    for the view path: its attribute where user xattrs are supported."""
    real = tree.real("pci", f"/sys/devices/pci0000:00/{DEVICE}/vendor")
    try:
        os.setxattr(real, XATTR, b"mock-vendor")
    except OSError:
        pass                                        # unsupported: the errors must still match
    exe = probes["fortify"]
    [viewed] = report(exe, tree.env(), VENDOR)
    [direct] = report(exe, no_shims(), real)
    calls = [c for c in viewed if "xattr" in c]
    assert len(calls) == 8
    assert {c: viewed[c] for c in calls} == {c: direct[c] for c in calls}
    assert viewed["getxattr"] != "No such file or directory"
    if XATTR in os.listxattr(real):
        assert viewed["getxattr"] == viewed["lgetxattr"] == "mock-vendor"


# --------------------------------------------------------------- the probe: every call


MISSING = "a host device missing from the mock: ENOENT"


@dataclass(frozen=True)
class View:
    """`path` from `chdir`/`dirfd`/`cwd` under the shims means `meaning` (where, path)."""
    path: str
    meaning: tuple[str, str]
    chdir: str = "-"
    dirfd: str = "-"
    cwd: str | None = None


VIEWS = {
    "'//'": View(f"/sys//bus/pci/devices/{DEVICE}", ("pci", f"/sys/bus/pci/devices/{DEVICE}")),
    "'/./' on a file": View(f"/sys/bus/./pci/devices/{DEVICE}/./vendor", ("pci", VENDOR)),
    "'..' back into the prefix": View(f"/sys/bus/../bus/pci/devices/{DEVICE}/vendor", ("pci", VENDOR)),
    "'..' out of the prefix": View("/sys/bus/pci/../../../../etc/passwd", ("host", "/etc/passwd")),
    "'..' out past the symlink": View(f"/sys/bus/pci/devices/{DEVICE}/../../../../../etc/passwd",
                                      ("host", "/etc/passwd")),
    "a trailing '/' on a file: ENOTDIR": View(f"/sys//bus/pci/devices/{DEVICE}/vendor/",
                                              ("pci", VENDOR + "/")),
    "a trailing '/' follows the symlink": View(f"/sys//bus/pci/devices/{DEVICE}/",
                                               ("pci", f"/sys/bus/pci/devices/{DEVICE}/")),
    "a trailing '/.' follows the symlink": View(f"/sys/./bus/pci/devices/{DEVICE}/.",
                                                ("pci", f"/sys/bus/pci/devices/{DEVICE}/.")),
    MISSING: View(f"/sys//bus/pci/devices/{HOST_DEVICE}",
                                                        ("pci", f"/sys/bus/pci/devices/{HOST_DEVICE}")),
    "relative in the host's /sys": View(f"bus/pci/devices/{DEVICE}/vendor", ("pci", VENDOR), cwd="/sys"),
    "relative after chdir into the mock": View(f"devices/{DEVICE}", ("pci", f"/sys/bus/pci/devices/{DEVICE}"),
                                               chdir="/sys/bus/pci"),
    "'..' after chdir into the mock": View("../../../../etc/passwd", ("host", "/etc/passwd"),
                                           chdir="/sys/bus/pci"),
    "'..' after chdir into the mock, to the host's /sys": View("../../class", ("host", "/sys/class"),
                                                              chdir="/sys/bus/pci"),
    "IB relative in /sys/class": View(f"infiniband/{HCA}", ("ib", f"/sys/class/infiniband/{HCA}"),
                                      cwd="/sys/class"),
    "IB '..' out of /dev/infiniband": View("/dev/infiniband/../../etc/passwd", ("host", "/etc/passwd")),
}

AT_VIEWS = {
    "a dir fd on the host's /sys": View(f"bus/pci/devices/{DEVICE}/vendor", ("pci", VENDOR), dirfd="/sys"),
    "a dir fd on /": View(f"sys/bus/pci/devices/{DEVICE}", ("pci", f"/sys/bus/pci/devices/{DEVICE}"),
                          dirfd="/"),
    "a dir fd opened through the shim": View(f"devices/{DEVICE}/vendor", ("pci", VENDOR),
                                             dirfd="/sys/bus/pci"),
    "'..' from a dir fd in the mock": View("../../../../etc/passwd", ("host", "/etc/passwd"),
                                           dirfd="/sys/bus/pci"),
    "'..' from a dir fd in the mock, to the host's /sys": View("../../../class", ("host", "/sys/class"),
                                                              dirfd="/sys/bus/pci/devices"),
    "IB: a dir fd on /sys/class": View(f"infiniband/{HCA}/fw_ver", ("ib", FW), dirfd="/sys/class"),
}


def expected(tree: Tree, exe: str, view: View) -> dict[str, str]:
    [plain] = report(exe, no_shims(), tree.real(*view.meaning))
    return plain


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
@pytest.mark.parametrize("case", sorted(VIEWS))
def test_every_call_sees_the_view_a_path_means(tree, probes, flavour, case):
    view = VIEWS[case]
    exe = probes[flavour]
    [got] = report(exe, tree.env(), view.path, chdir=view.chdir, cwd=view.cwd)
    want = expected(tree, exe, view)
    assert got == want
    if case == MISSING:
        assert set(got.values()) == {"No such file or directory"}


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
@pytest.mark.parametrize("case", sorted(AT_VIEWS))
def test_at_calls_resolve_against_their_directory_fd(tree, probes, flavour, case):
    view = AT_VIEWS[case]
    exe = probes[flavour]
    [got] = report(exe, tree.env(), view.path, dirfd=view.dirfd)
    want = expected(tree, exe, view)
    assert {c: got[c] for c in AT_CALLS} == {c: want[c] for c in AT_CALLS}


def test_a_dir_fd_on_the_roots_real_path_counts_as_the_view(tree, probes):
    """The directory fd the shim hands out for /sys/bus/pci is root/sys/bus/pci: the
    same directory opened by that name climbs the view too."""
    exe = probes["fortify"]
    [got] = report(exe, tree.env(), "../../../../etc/passwd", dirfd=tree.pci + "/sys/bus/pci")
    assert got["openat"] == host_passwd().splitlines()[0]


def test_a_non_directory_fd_fails_as_without_the_shim(tree, probes):
    """A file's fd is no directory: ".." from it is ENOTDIR, not the file's directory."""
    exe = probes["fortify"]
    vendor = tree.real("pci", f"/sys/devices/pci0000:00/{DEVICE}/vendor")
    [shimmed] = report(exe, tree.env(), "..", dirfd=vendor)
    [plain] = report(exe, no_shims(), "..", dirfd=vendor)
    assert {c: shimmed[c] for c in AT_CALLS} == {c: plain[c] for c in AT_CALLS}
    assert set(shimmed[c] for c in AT_CALLS) == {"Not a directory"}


# --------------------------------------------------------------- nothing changes unset

SAMPLE = ("NULL", "", "/etc/passwd", "/nonexistent/x", "etc/../etc/passwd", "/sys//bus/pci/devices",
          "/sys/bus/pci/../../../../etc/passwd", "sys/bus/pci/devices", "../..", "/dev/infiniband",
          "/sys/class/infiniband", "/bin")


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_unset_variables_change_no_call_null_included(tree, probes, flavour):
    exe = probes[flavour]
    for where in ({"cwd": "/"}, {"cwd": "/sys"}, {"dirfd": "/sys"}, {"chdir": "/sys/bus"}):
        got = report(exe, tree.unset_env(), *SAMPLE, **where)
        plain = report(exe, no_shims(), *SAMPLE, **where)
        assert got == plain, where
    [null] = report(exe, no_shims(), "NULL")
    assert null["stat"] == null["open"] == "Bad address"         # EFAULT, from the kernel


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_null_and_empty_paths_pass_through_with_the_variables_set(tree, probes, flavour):
    exe = probes[flavour]
    for where in ({"cwd": "/sys"}, {"chdir": "/sys/bus/pci"}, {"dirfd": "/sys/bus/pci"}):
        assert report(exe, tree.env(), "NULL", "", **where) == report(exe, no_shims(), "NULL", "", **where)
