"""CPU instructions (and syscalls) per CreateContainer in the nri-plugin process, against a baseline.

Wall time on a shared machine says little; instructions do not depend on the
load. This runs ``python -m mokka nri-plugin`` under ``valgrind --tool=callgrind``
against the fake runtime (tests/nri/fakeruntime.py, the real wire format), with
the flags bench/nri_latency.py gives it (nothing staged but --imex-channels IMEX
channel nodes), sends the warm-up requests, zeroes callgrind's counters, sends
--count sequential CreateContainers of one scenario and dumps the counters: what
every thread of the plugin executed for them, reading, deciding, encoding and
writing, divided by --count. Scenarios: the repeated pod and the varied mix of
tests/nri/workload.py, built as nri_latency.py builds them.

The baseline is the same measurement, in the same run, of the tree at git
revision --baseline (exported with ``git archive``), so the ratio compares two
versions of the plugin under the same interpreter and libraries. ``--syscalls``
also counts the system calls per request of each (``strace -c`` attached to
every thread for the measured calls; strace's own cost is not in the
instruction counts, which are taken in a separate run).

Counts repeat within ~0.2 % with --imex-channels 0, and within a few percent
with IMEX channels staged: the node view revalidates the staged tree once a
second, and under callgrind a second is only ~20 requests, so a loaded machine
adds revalidations. --runs N keeps each tree's least count of N runs.

    python bench/nri_instructions.py [--baseline main] [--count 300] [--warmup 60] [--runs 1]
                                     [--imex-channels 2048] [--seed 1] [--syscalls]
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import missing_prerequisite, require_test_environment  # noqa: E402

require_test_environment()

from tests.nri.fakeruntime import FakeRuntime, remove_socket_dir, short_socket_path  # noqa: E402
from tests.nri.workload import mixed, request  # noqa: E402

#: Under callgrind the interpreter runs ~50x slower: a generous start-up budget.
START_TIMEOUT_S = 600


def stage_imex(count: int) -> str:
    """A temp dir of ``count`` IMEX channel char nodes (as nri_latency.py stages them)."""
    from nri_latency import stage_imex as stage
    directory = stage(count)
    if directory is None:
        missing_prerequisite("mknod (root) to stage IMEX channel nodes", "run as root, or pass "
                             "--imex-channels 0")
    return directory


def export_tree(revision: str, into: str) -> str:
    """The checkout's tree at ``revision``, as files under ``into``."""
    archive = os.path.join(into, "tree.tar")
    done = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", "-o", archive, revision],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench/nri_instructions.py: cannot export --baseline {revision!r}: "
                         f"{done.stderr.strip()}: name a commit of this repository")
    tree = os.path.join(into, "tree")
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    os.unlink(archive)
    return tree


def _totals(path: str) -> int:
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise ValueError(f"no totals in {path}")


class Plugin:
    """One plugin process (of ``tree``) linked to its own fake runtime."""

    def __init__(self, tree: str, wrapper: list[str], flags: list[str], env: dict) -> None:
        self.path = short_socket_path()
        self.runtime = FakeRuntime(self.path).__enter__()
        env = dict(env, PYTHONPATH=tree)
        self.proc = subprocess.Popen([*wrapper, sys.executable, "-m", "mokka", "nri-plugin",
                                      f"--socket-path={self.path}", *flags],
                                     env=env, cwd=tree, stdout=subprocess.DEVNULL)
        self.link = self.runtime.wait_link(1, timeout=START_TIMEOUT_S)
        self.link.wait_registered(timeout=START_TIMEOUT_S)
        self.link.handshake()

    def calls(self, payloads: list[bytes]) -> None:
        for p in payloads:
            resp = self.link.wait_response(self.link.start_call("CreateContainer", p),
                                           timeout=START_TIMEOUT_S)
            assert resp.code == 0, resp

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.runtime.__exit__(None, None, None)
        remove_socket_dir(self.path)


def instructions(tree: str, flags: list[str], env: dict, scenarios: dict, warmup: int,
                 work: str) -> dict[str, int]:
    """Instructions per request of each scenario, every plugin thread counted."""
    out_dir = tempfile.mkdtemp(prefix="cg-", dir=work)
    wrapper = ["valgrind", "--tool=callgrind", "--quiet",
               f"--callgrind-out-file={out_dir}/cg.out"]
    plugin = Plugin(tree, wrapper, flags, env)
    per: dict[str, int] = {}
    try:
        for name, payloads in scenarios.items():
            plugin.calls(payloads[:warmup])
            _control(plugin.proc.pid, "-z")
            plugin.calls(payloads[warmup:])
            before = set(glob.glob(f"{out_dir}/cg.out*"))
            _control(plugin.proc.pid, "-d")
            dumped = sorted(set(glob.glob(f"{out_dir}/cg.out*")) - before)
            per[name] = round(sum(_totals(p) for p in dumped) / (len(payloads) - warmup))
    finally:
        plugin.close()
    return per


def _control(pid: int, option: str) -> None:
    subprocess.run(["callgrind_control", option, str(pid)], check=True, capture_output=True,
                   timeout=START_TIMEOUT_S)


def syscalls(tree: str, flags: list[str], env: dict, scenarios: dict, warmup: int,
             work: str) -> dict[str, float]:
    """System calls per request of each scenario (strace -c on every thread)."""
    plugin = Plugin(tree, [], flags, env)
    per: dict[str, float] = {}
    try:
        for name, payloads in scenarios.items():
            plugin.calls(payloads[:warmup])
            out = os.path.join(work, f"strace-{name.replace(' ', '-')}.txt")
            tids = sorted(os.listdir(f"/proc/{plugin.proc.pid}/task"))
            tracer = subprocess.Popen(["strace", "-c", "-f", "-o", out,
                                       *(a for t in tids for a in ("-p", t))],
                                      stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)                   # attached (strace prints nothing on success)
            plugin.calls(payloads[warmup:])
            tracer.send_signal(signal.SIGINT)
            tracer.wait(60)
            with open(out) as f:
                # "% time  seconds  usecs/call  calls  [errors]  total"
                total = [line.split() for line in f if line.rstrip().endswith(" total")]
            per[name] = int(total[-1][3]) / (len(payloads) - warmup) if total else float("nan")
    finally:
        plugin.close()
    return per


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main",
                        help="git revision measured alongside this checkout (default main)")
    parser.add_argument("--count", type=int, default=300, help="measured requests per scenario")
    parser.add_argument("--warmup", type=int, default=60, help="requests before counting")
    parser.add_argument("--imex-channels", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=1,
                        help="plugin runs per tree, the least count kept (see above)")
    parser.add_argument("--syscalls", action="store_true", help="also count syscalls (strace)")
    args = parser.parse_args(argv)
    for tool in ("valgrind", "callgrind_control", *(("strace",) if args.syscalls else ())):
        if shutil.which(tool) is None:
            missing_prerequisite(tool, "apt-get install valgrind strace")

    total = args.warmup + args.count
    rnd = random.Random(args.seed)
    scenarios = {"repeated pod": [request(i, rnd.randint(4096, 12288), rnd) for i in range(total)],
                 "varied mix": mixed(total, rnd)}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "NRI_PLUGIN_"))}
    env["PYTHONHASHSEED"] = "0"                     # the same dict layouts in every run
    with contextlib.ExitStack() as stack:
        work = tempfile.mkdtemp(prefix="mokka-bench-instructions-")
        stack.callback(shutil.rmtree, work, True)
        flags = ["--health-addr=", "--log-level=error"]
        if args.imex_channels:
            imex = stage_imex(args.imex_channels)
            stack.callback(shutil.rmtree, imex, True)
            flags.append(f"--imex-channel-host-path={imex}")
        trees = {f"baseline {args.baseline}": export_tree(args.baseline, work), "this checkout": ROOT}
        counted: dict[str, dict[str, int]] = {label: {} for label in trees}
        for _ in range(max(1, args.runs)):
            for label, tree in trees.items():      # interleaved: drifting load hits both
                run = instructions(tree, flags, env, scenarios, args.warmup, work)
                for name, n in run.items():
                    counted[label][name] = min(n, counted[label].get(name, n))
        traced = ({label: syscalls(tree, flags, env, scenarios, args.warmup, work)
                   for label, tree in trees.items()} if args.syscalls else {})
    base, ours = counted.values()
    print(f"nri-plugin instructions per CreateContainer (callgrind, every thread), "
          f"{args.count} requests per scenario after {args.warmup} warm-up, "
          f"{args.imex_channels} IMEX channel nodes staged")
    print(f"{'scenario':<16}{'baseline':>14}{'this':>14}{'ratio':>8}")
    for name in scenarios:
        print(f"{name:<16}{base[name]:>14,}{ours[name]:>14,}{ours[name] / base[name]:>7.2f}x")
    if traced:
        sbase, sours = traced.values()
        print("syscalls per CreateContainer (strace -c, every thread)")
        for name in scenarios:
            print(f"{name:<16}{sbase[name]:>14.2f}{sours[name]:>14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
