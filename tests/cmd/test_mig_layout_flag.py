"""``mokka node-agent --mig-layout NAME`` on a built-in profile that has no layout NAME: one
line naming the profile's layouts (or saying its GPUs have no MIG), exit 2, and nothing
staged under the host root (mokka/cmd/agent.py ``check_mig_layout``). Checking a100's
layouts asks the checkout's mock NVML library where the instances go (the session builds
it: tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.conftest import run_mokka

A100_LAYOUTS = ("all-1g.5gb, all-1g.10gb, all-2g.10gb, all-3g.20gb, all-4g.20gb, all-7g.40gb, "
                "all-balanced, all-enabled")
H100_LAYOUTS = ("all-1g.10gb, all-1g.20gb, all-2g.20gb, all-3g.40gb, all-4g.40gb, all-7g.80gb, "
                "all-balanced, all-enabled")


@pytest.mark.parametrize("profile, problem", [
    ("a100", f"not one of the profile's mig.layouts ({A100_LAYOUTS})"),
    ("h100", f"not one of the profile's mig.layouts ({H100_LAYOUTS})"),
    ("gb300", "this profile's GPUs have no MIG partition table"),
])
def test_an_unknown_layout_is_one_line_exit_2_and_nothing_staged(tmp_path, profile, problem):
    root = tmp_path / "root"
    root.mkdir()
    done = run_mokka("node-agent", "--once", "--host-root", str(root), "--health-addr", "",
                     "--profile", profile, "--mig-layout", "nope")
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"mokka node-agent: profile {profile}: --mig-layout nope: {problem} "
               "(see 'mokka node-agent --help')\n")
    assert list(root.iterdir()) == []
