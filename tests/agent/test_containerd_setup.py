"""ContainerdSetup on a scratch host root: what Apply and Revoke write, when containerd
restarts (through a recording runner), the leave-alone cases, and the toolkit path
with a stand-in nvidia-ctk."""

from __future__ import annotations

import os
import stat
import tomllib

import pytest

from mokka.agent.containerd.config import Settings
from mokka.agent.containerd.restart import Restarter, RestartError
from mokka.agent.containerd.setup import OWNER, ContainerdSetup
from mokka.agent.containerd.toolkit import Toolkit
from mokka.agent.hostfs import HostFS
from mokka.agent.manifest import Manifest
from mokka.core import names
from tests.agent.test_containerd_config import HANDLER

CRI, NRI = names.CONTAINERD_CRI_PLUGIN_V2, names.CONTAINERD_NRI_PLUGIN
HOST_CONFIG = f"""# the host's comment
version = 2

[plugins."{CRI}"]
  sandbox_image = "registry.example/pause:3.9"
"""
RESTART = " ".join(names.CONTAINERD_RESTART_COMMAND)
QUEUE = " ".join(names.CONTAINERD_QUEUE_RESTART_COMMAND)


class Log:
    def __init__(self):
        self.lines: list[tuple[str, str, dict]] = []

    def _add(self, level, msg, **fields):
        self.lines.append((level, msg, fields))

    def info(self, msg, **f):
        self._add("info", msg, **f)

    def warning(self, msg, **f):
        self._add("warn", msg, **f)

    def error(self, msg, **f):
        self._add("error", msg, **f)

    def said(self, text: str) -> int:
        return sum(1 for _, msg, _ in self.lines if text in msg)


class Runner:
    """Records each command; answers with ``status`` (systemctl) or runs ``handler``."""

    def __init__(self, status: int = 0):
        self.calls: list[str] = []
        self.status = status

    def __call__(self, argv):
        self.calls.append(" ".join(argv))
        return (self.status, "Job for containerd.service failed" if self.status else "")

    def restarts(self) -> list[str]:
        return [c for c in self.calls if c.startswith("systemctl")]


def executable(path, text="#!/bin/sh\nexit 0\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


@pytest.fixture
def host(tmp_path):
    root = tmp_path / "host"
    executable(str(root / "usr/bin/containerd"))
    (root / "etc/containerd").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text(HOST_CONFIG)
    os.chmod(root / "etc/containerd/config.toml", 0o600)
    (root / "var/lib").mkdir(parents=True)
    return root


def make(root, mode=names.RESTART_MODE_SYSTEMD, runner=None, log=None, which=lambda _: None):
    log = log or Log()
    runner = runner or Runner()
    fs = HostFS(Manifest(str(root / "var/lib/manifest.json"), log), log)
    setup = ContainerdSetup(str(root), Settings(), fs, log, Restarter(mode, log, runner),
                            Toolkit(str(root), log, which=which, runner=runner))
    return setup, runner, log


def drop_in(root) -> dict:
    return tomllib.loads((root / "etc/containerd/conf.d/50-mokka.toml").read_text())


def tree(root) -> dict[str, bytes | str]:
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                out[rel] = open(p, "rb").read()
            else:
                out[rel] = "dir"
    return out


def test_apply_writes_mokkas_file_and_the_import_keeping_the_host_config(host):
    setup, _, _ = make(host)
    setup.apply()
    assert drop_in(host)["plugins"][CRI] == {
        "sandbox_image": "registry.example/pause:3.9", "enable_cdi": True,
        "cdi_spec_dirs": ["/etc/cdi", "/var/run/cdi"]}
    assert drop_in(host)["plugins"][NRI] == {"disable": False, "socket_path": "/var/run/nri/nri.sock"}
    config = host / "etc/containerd/config.toml"
    assert config.read_text() == HOST_CONFIG.replace(
        "version = 2\n", 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n')
    assert stat.S_IMODE(os.stat(config).st_mode) == 0o600


def test_revoke_restores_the_host_byte_for_byte_and_queues_a_restart(host):
    before = tree(host)
    setup, runner, _ = make(host)
    setup.apply()
    setup.revoke()
    after = tree(host)
    after.pop("var/lib/manifest.json", None)
    before.pop("var/lib/manifest.json", None)
    assert after == before
    assert stat.S_IMODE(os.stat(host / "etc/containerd/config.toml").st_mode) == 0o600
    assert runner.restarts() == [RESTART, QUEUE]


def test_a_host_without_config_gets_a_minimal_one_which_revoke_removes(host):
    (host / "etc/containerd/config.toml").unlink()
    (host / "etc/containerd").rmdir()
    setup, _, _ = make(host)
    setup.apply()
    assert (host / "etc/containerd/config.toml").read_text() == \
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    assert drop_in(host)["plugins"][CRI]["enable_cdi"] is True
    setup.revoke()
    assert not (host / "etc/containerd").exists()


def test_reapply_rederives_from_the_hosts_original_not_from_our_edit(host):
    setup, _, _ = make(host)
    setup.apply()
    first = (host / "etc/containerd/config.toml").read_text()
    setup.apply()
    assert (host / "etc/containerd/config.toml").read_text() == first
    assert first.count("conf.d/*.toml") == 1


def test_another_writers_change_to_config_toml_is_kept_by_apply_and_revoke(host):
    setup, _, log = make(host)
    setup.apply()
    config = host / "etc/containerd/config.toml"
    theirs = config.read_text() + "\n[debug]\n  level = \"debug\" # config management\n"
    config.write_text(theirs)
    setup.apply()
    assert config.read_text() == theirs             # already imports the dir: left as written
    assert log.said("changed by another writer") == 1
    assert drop_in(host)["plugins"][CRI]["sandbox_image"] == "registry.example/pause:3.9"
    setup.revoke()
    assert config.read_text() == theirs
    assert not (host / "etc/containerd/.config.toml.mokka-orig").exists()


def test_restarts_changed_once_unchanged_none_new_agent_once(host):
    setup, runner, _ = make(host)
    setup.apply()                                   # changed (and agent start): one
    assert runner.restarts() == [RESTART]
    setup.apply()                                   # unchanged: none
    assert runner.restarts() == [RESTART]
    (host / "etc/containerd/conf.d/50-mokka.toml").write_text("# edited by hand\n")
    setup.apply()                                   # changed again: one more
    assert runner.restarts() == [RESTART, RESTART]
    again, runner2, _ = make(host)                  # a new agent process, nothing to change
    again.apply()
    assert runner2.restarts() == [RESTART]


def test_restart_mode_none_restarts_nothing_and_logs_pending(host):
    setup, runner, log = make(host, mode=names.RESTART_MODE_NONE)
    setup.apply()
    setup.revoke()
    assert runner.calls == []
    assert log.said("restart is pending") == 2


def test_a_failing_systemctl_fails_apply_naming_the_command_and_is_retried(host):
    runner = Runner(status=1)
    setup, _, _ = make(host, runner=runner)
    with pytest.raises(RestartError) as info:
        setup.apply()
    assert f"`{RESTART}` exited 1: Job for containerd.service failed" in str(info.value)
    runner.status = 0
    setup.apply()                                   # files unchanged, restart still owed
    assert runner.restarts() == [RESTART, RESTART]


@pytest.mark.parametrize("prepare,level,why", [
    (lambda root: (root / "usr/bin/containerd").unlink(), "info",
     "no containerd in {root}/usr/local/sbin:{root}/usr/local/bin:{root}/usr/sbin:{root}/usr/bin:"
     "{root}/sbin:{root}/bin (the host's PATH under --host-root {root}): no container runtime, or "
     "another one (CRI-O, or the containerd k3s and rke2 embed); container runtime left alone"),
    (lambda root: executable(str(root / "usr/bin/nvidia-ctk")), "warn",
     "/usr/bin/nvidia-ctk is not a link Mokka made"),
    (lambda root: (root / "etc/nvidia-container-runtime").mkdir(parents=True)
     or (root / "etc/nvidia-container-runtime/config.toml").write_text("x"), "warn",
     "/etc/nvidia-container-runtime/config.toml is not a link Mokka made"),
], ids=["no containerd on PATH (a bare host, CRI-O, k3s, rke2) is information",
        "a packaged nvidia-ctk is a warning", "a packaged runtime config is a warning"])
def test_leave_alone_writes_nothing_restarts_nothing_and_says_why_once(host, prepare, level, why):
    prepare(host)
    before = tree(host)
    setup, runner, log = make(host)
    setup.apply()
    setup.apply()
    setup.revoke()
    assert tree(host) == before
    assert runner.calls == []
    assert [lvl for lvl, msg, _ in log.lines if why.format(root=host) in msg] == [level]


# --- the toolkit path, with a stand-in nvidia-ctk --------------------------------

STAND_IN = f"""#!/bin/sh
# A stand-in nvidia-ctk: records its arguments, writes a handler table to --drop-in-config.
echo "$@" >> "{{record}}"
for a in "$@"; do case "$a" in --drop-in-config=*) out="${{a#--drop-in-config=}}";; esac; done
mkdir -p "$(dirname "$out")"
cat > "$out" <<'EOF'
{HANDLER}EOF
"""


@pytest.fixture
def release(tmp_path):
    folder = tmp_path / "image-toolkit"
    record = tmp_path / "ctk-args"
    executable(str(folder / "nvidia-ctk"), STAND_IN.replace("{record}", str(record)))
    executable(str(folder / "nvidia-container-runtime"), "#!/bin/sh\necho runtime\n")
    executable(str(folder / "nvidia-cdi-hook"), "#!/bin/sh\necho hook\n")
    return folder, record


def run_for_real(argv):
    import subprocess
    if argv[0] == "systemctl":
        return 0, ""
    done = subprocess.run(argv, capture_output=True, text=True)
    return done.returncode, done.stderr


def test_toolkit_release_is_installed_configured_with_the_seeds_flags_and_gets_nri(host, release):
    folder, record = release
    setup, _, log = make(host, runner=run_for_real,
                         which=lambda name: str(folder / name) if name == "nvidia-ctk" else None)
    setup.apply()
    args = record.read_text().split()
    assert args[:4] == ["runtime", "configure", "--runtime=containerd", "--config-source=file"]
    assert args[6:] == ["--nvidia-runtime-name=nvidia",
                        "--nvidia-runtime-path=/usr/bin/nvidia-container-runtime",
                        "--nvidia-set-as-default", "--cdi.enabled"]
    plugins = drop_in(host)["plugins"]
    assert plugins[CRI]["containerd"]["default_runtime_name"] == "nvidia"
    assert plugins[CRI]["enable_cdi"] is True
    assert plugins[NRI] == {"disable": False, "socket_path": "/var/run/nri/nri.sock"}
    for binary in names.TOOLKIT_BINARIES:
        assert os.readlink(host / "usr/bin" / binary) == f"/usr/local/nvml-mock/toolkit/{binary}"
        assert (host / "usr/local/nvml-mock/toolkit" / binary).read_bytes() == \
            (folder / binary).read_bytes()
    assert os.readlink(host / "etc/nvidia-container-runtime/config.toml") == \
        "/usr/local/nvml-mock/toolkit/config.toml"
    assert 'mode = "cdi"' in (host / "usr/local/nvml-mock/toolkit/config.toml").read_text()
    assert log.said("handler is skipped") == 0

    setup.revoke()                                  # the handler's binaries stay
    assert not (host / "etc/containerd/conf.d/50-mokka.toml").exists()
    assert (host / "etc/containerd/config.toml").read_text() == HOST_CONFIG
    assert (host / "usr/local/nvml-mock/toolkit/nvidia-container-runtime").exists()

    again, _, log2 = make(host, runner=run_for_real,
                          which=lambda name: str(folder / name) if name == "nvidia-ctk" else None)
    again.apply()                                   # our own links are not "another installer"
    assert log2.said("not a link Mokka made") == 0
    assert drop_in(host)["plugins"][CRI]["containerd"]["default_runtime_name"] == "nvidia"


def test_without_a_toolkit_release_the_handler_is_skipped_logged_once(host):
    setup, _, log = make(host)
    setup.apply()
    setup.apply()
    assert log.said("handler is skipped") == 1
    assert "containerd" not in drop_in(host)["plugins"][CRI]
    assert setup.fs.manifest.paths(OWNER)
