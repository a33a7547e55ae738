"""The Go reader (main.go here): a static Go program that prints, as JSON, what
gpu-feature-discovery, the device plugin and mig-parted read of a node themselves
(/sys/bus/pci/devices, /sys/module/nvidia/version, /proc/driver/nvidia/version,
/proc/modules), out of LD_PRELOAD's reach. Built once per session with the machine's
Go (Debian's golang-go; std library only, CGO_ENABLED=0, no module, no network).

No ``go`` skips, loudly, unless MOKKA_REQUIRE_RUNTIME=1 (CI), where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

SOURCE_DIR = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(SOURCE_DIR, "main.go")
#: Its name wherever the tests put it (a container image, a scratch directory).
NAME = "goreader"
BUILD_TIMEOUT_S = 300


def go_missing() -> None:
    reason = "GO NOT INSTALLED: `apt-get install golang-go` (the README's test packages) builds the Go reader"
    if os.environ.get("MOKKA_REQUIRE_RUNTIME") == "1":
        pytest.fail(reason)
    pytest.skip("!" * 20 + " " + reason + " " + "!" * 20)


def build(out_dir: str) -> str:
    """``out_dir``/goreader, statically linked; every Go cache inside ``out_dir``."""
    go = shutil.which("go")
    if go is None:
        go_missing()
    out = os.path.join(out_dir, NAME)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": out_dir,
        "GOCACHE": os.path.join(out_dir, "gocache"),
        "GOPATH": os.path.join(out_dir, "gopath"),
        # A single file of the std library: no module, no proxy, no toolchain download.
        "GO111MODULE": "off", "GOFLAGS": "", "GOTOOLCHAIN": "local", "GOPROXY": "off",
        "CGO_ENABLED": "0",
    }
    done = subprocess.run([go, "build", "-trimpath", "-o", out, SOURCE], cwd=SOURCE_DIR, env=env,
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert done.returncode == 0, f"go build of {SOURCE} failed:\n{done.stderr}"
    return out


def parse(stdout: str) -> dict:
    """The reader's report."""
    return json.loads(stdout)


def nvidia_devices(report: dict) -> list[dict]:
    """The PCI entries with NVIDIA's vendor id."""
    return [d for d in report["pci_devices"] if d["vendor"] == "0x10de"]
