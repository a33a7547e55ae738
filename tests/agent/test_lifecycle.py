"""--once/--teardown round trips, converging an existing tree, and kill -9 mid-Stage."""

from __future__ import annotations

import os
import re

import pytest
from helpers import frozen_package, profile_bytes, run_agent
from treelist import diff, listing

from mokka.agent.hostfs import backup_path
from mokka.agent.manifest import MANIFEST_FILE
from mokka.core import names
from mokka.core.overlay import host_overlay, under

# Whole agent round trips, a kill -9 mid-Stage included: about a minute.
pytestmark = pytest.mark.slow


def write_profile(outside: str, name: str, count: int) -> str:
    path = os.path.join(outside, f"{name}-{count}.yaml")
    with open(path, "wb") as f:
        f.write(profile_bytes(name, count))
    return path


def test_once_then_teardown_leaves_the_root_as_found(scratch):
    root, outside, _ = scratch
    before = listing(root)
    r = run_agent(root, "--once", "--profile", "h100", "--imex-channels", "2")
    assert r.returncode == 0, r.stderr
    ov = host_overlay(root)
    assert os.path.exists(ov.gpu_node(7)) and os.path.exists(os.path.join(ov.root, MANIFEST_FILE))
    assert os.path.exists(os.path.join(root, "etc/kubernetes/node-feature-discovery/features.d"))
    r = run_agent(root, "--teardown")
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(rf"torn down {re.escape(root)}: [1-9][0-9]* paths, [0-9]+ mounts?\n", r.stdout), r.stdout
    after = listing(root)
    assert after == before, diff(before, after)
    again = run_agent(root, "--teardown")                 # nothing staged: nothing to say it removed
    assert (again.returncode, again.stdout) == (0, f"torn down {root}: 0 paths, 0 mounts\n"), again.stderr
    assert listing(root) == before


def test_a_nodes_sysfs_files_of_equal_bytes_are_one_inode_each_set(scratch):
    root, _, _ = scratch
    assert run_agent(root, "--once", "--profile", "h100").returncode == 0
    ov = host_overlay(root)
    hcas = os.path.join(ov.ib, "sys/class/infiniband")
    counters = [os.stat(os.path.join(hcas, f"mlx5_{i}/ports/1/counters/{name}"))
                for i in (0, 7) for name in ("symbol_error", "port_xmit_data")]
    # Each of 8 HCAs: 21 counters, sm_sl and lid_mask_count, all "0".
    assert len({st.st_ino for st in counters}) == 1 and counters[0].st_nlink == 8 * 23
    guids = {os.stat(os.path.join(hcas, f"mlx5_{i}/node_guid")).st_ino for i in range(8)}
    assert len(guids) == 8                                      # other bytes: a file each
    bus = os.path.join(ov.sys, "bus/pci/devices")
    vendors = {os.stat(os.path.join(bus, bdf, "vendor")).st_ino for bdf in os.listdir(bus)}
    # 8 GPUs, their 8 HCAs and 32 PCIe ports on the bus: one "0x10de" inode, one "0x15b3",
    # one "0x8086" (the root ports) and one "0x1000" (the switch ports).
    assert len(os.listdir(bus)) == 48 and len(vendors) == 4
    with open(os.path.join(hcas, "mlx5_7/ports/1/counters/symbol_error")) as f:
        assert f.read() == "0\n"


def test_files_the_host_already_had_are_restored_at_teardown(scratch):
    """A real toolkit's CDI spec and an operator's NFD feature file at the paths
    the agent publishes: moved aside while the agent owns the paths, put back after."""
    root, _, _ = scratch
    cdi_dir = under(root, names.CDI_SPEC_DIR)
    toolkit_spec = os.path.join(cdi_dir, names.CDI_SPEC_GPU_FILE)
    nfd_file = under(root, names.NFD_FEATURE_FILE)
    for path, text, mode in ((toolkit_spec, "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n", 0o600),
                             (nfd_file, "operator.example/label=1\n", 0o644)):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
    before = listing(root)
    assert run_agent(root, "--once", "--profile", "t4").returncode == 0
    with open(toolkit_spec) as f:
        assert f"cdiVersion: {names.CDI_VERSION}" in f.read()          # ours, while staged
    with open(nfd_file) as f:
        assert f.read().strip() == names.NFD_FEATURE_LINE
    assert os.path.exists(backup_path(toolkit_spec)) and os.path.exists(backup_path(nfd_file))
    assert run_agent(root, "--teardown").returncode == 0
    after = listing(root)
    assert after == before, diff(before, after)


def test_a_new_profile_converges_the_existing_tree_exactly(scratch):
    root, outside, _ = scratch
    assert run_agent(root, "--once", "--profile", write_profile(outside, "a100", 8)).returncode == 0
    small = write_profile(outside, "a100", 4)
    assert run_agent(root, "--once", "--profile", small).returncode == 0
    converged = listing(root)
    assert run_agent(root, "--teardown").returncode == 0
    assert run_agent(root, "--once", "--profile", small).returncode == 0
    fresh = listing(root)
    assert converged == fresh, diff(fresh, converged)
    assert sorted(n for n in os.listdir(host_overlay(root).dev) if n[6:].isdigit()) == \
        [f"nvidia{i}" for i in range(4)]


def test_once_with_a_broken_profile_fails_with_one_line(scratch):
    root, outside, _ = scratch
    bad = os.path.join(outside, "bad.yaml")
    with open(bad, "w") as f:
        f.write("system: [\n")
    r = run_agent(root, "--once", "--profile", bad)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith(f"node-agent: {bad}: invalid YAML")


def fault(n: int) -> dict:
    return {names.ENV_FAULT_AFTER_WRITES: str(n)}


def test_a_kill_at_every_write_of_stage_then_restart_converges(scratch):
    """The fault hook ends --once at its Nth write (after the temp file, before the rename,
    as a kill -9 would), swept over N until a run completes. Each restart converges: a
    --once to exactly the tree of a clean run, a --teardown to the root as found."""
    root, outside, _ = scratch
    args = ("--profile", write_profile(outside, "t4", 2), "--imex-channels", "2")
    code = frozen_package(os.path.join(outside, "pkg"))
    before = listing(root)
    assert run_agent(root, "--once", *args, cwd=code).returncode == 0
    clean = listing(root)
    assert run_agent(root, "--teardown", cwd=code).returncode == 0
    assert listing(root) == before
    n, aborted = 1, []
    while True:
        r = run_agent(root, "--once", *args, cwd=code, env=fault(n))
        if r.returncode == 0:
            break
        assert r.returncode == names.FAULT_EXIT_STATUS, r.stderr
        aborted.append(n)
        if len(aborted) % 2:
            assert run_agent(root, "--once", *args, cwd=code).returncode == 0
            after = listing(root)
            assert after == clean, (n, diff(clean, after))
        assert run_agent(root, "--teardown", cwd=code).returncode == 0
        after = listing(root)
        assert after == before, (n, diff(before, after))
        n += 1 if n < 8 else n // 2
    assert len(aborted) >= 8, aborted
    # The same sweep inside --teardown: an interrupted one keeps its manifest; the next finishes.
    n, aborted = 1, []
    while True:
        r = run_agent(root, "--teardown", cwd=code, env=fault(n))
        if r.returncode == 0:
            break
        assert r.returncode == names.FAULT_EXIT_STATUS, r.stderr
        aborted.append(n)
        assert os.path.exists(os.path.join(host_overlay(root).root, MANIFEST_FILE))
        assert run_agent(root, "--teardown", cwd=code).returncode == 0
        after = listing(root)
        assert after == before, (n, diff(before, after))
        assert run_agent(root, "--once", *args, cwd=code).returncode == 0
        n += 1
    assert aborted, "no write inside --teardown"
    assert run_agent(root, "--teardown", cwd=code).returncode == 0
    assert listing(root) == before
