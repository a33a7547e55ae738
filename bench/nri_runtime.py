"""CreateContainer through CRI on a real containerd 1.7.24 (NRI on), with and without mokka.

Stages a scratch node with the real node agent (``--once``), starts a scratch
containerd (tests/integration/runtime.py; fetched by .ci/fetch-runtime.sh) and
times CreateContainer of a devices-annotated pod's container, in alternating
blocks: without the plugin, then with the freshly built zipapp's ``nri-plugin``
registered, and so on. Alternating blocks (not one long run each) keep slow drift
of the machine (page cache, snapshots piling up) from landing on one side only.
The first container of every "with" block must show our mount and device nodes,
of every "without" block neither, so the figures are known to measure injection.
Then reads the plugin's VmRSS (and VmHWM) from /proc. Needs root.
Targets: <= 3 ms added to the median CreateContainer; plugin RSS <= 35 MiB.

    python bench/nri_runtime.py [--count 40] [--block 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.dirname(os.path.abspath(__file__))]

from common import build_native_libraries, build_zipapp, missing_prerequisite, require_test_environment  # noqa: E402

require_test_environment()

from mokka.core import names  # noqa: E402
from tests.integration.containerd import Containerd  # noqa: E402
from tests.integration.pods import container_spec, create_container, remove_pod, run_pod  # noqa: E402
from tests.integration.runtime import runtime_dir, runtime_paths  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

PLUGIN = ("10", "mokka-bench")
TARGET_ADDED_MS = 3.0
TARGET_RSS_MIB = 35.0


def mokka_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "NRI_PLUGIN_"))}
    env["PYTHONPATH"] = ROOT
    return env


def agent(node_root: str, mode: str) -> None:
    subprocess.run([sys.executable, "-m", "mokka", "node-agent", mode, "--host-root", node_root,
                    "--profile", "t4", "--health-addr", ""],
                   check=True, env=mokka_env(), cwd=ROOT, capture_output=True)


def _status(url: str) -> int:
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:                 # nothing listening yet
        return 0


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS/VmHWM of ``pid`` in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


class Plugin:
    """The real nri-plugin on the containerd's socket; ``start`` returns once registered."""

    def __init__(self, zipapp: str, ctrd: Containerd, node_root: str, gate: list[str]) -> None:
        self.ctrd = ctrd
        self.argv = [zipapp, "nri-plugin", "--socket-path", ctrd.nri_socket, *gate,
                     "--plugin-index", PLUGIN[0], "--plugin-name", PLUGIN[1],
                     "--overlay-host-path", os.path.join(node_root, names.OVERLAY_HOST_PATH.lstrip("/")),
                     "--cdi-spec-host-path", os.path.join(node_root, names.CDI_SPEC_DIR.lstrip("/"),
                                                          names.CDI_SPEC_MOCK_FILE),
                     "--health-addr", "", "--log-level", "error"]
        self.log_path = os.path.join(ctrd.workdir, "plugin.log")
        self.proc: subprocess.Popen | None = None
        self.connected = False

    def _count(self, text: str) -> int:
        return self.ctrd.log_text().count(text)

    def start(self) -> None:
        registered = f'registered as \\"{PLUGIN[0]}-{PLUGIN[1]}\\"'     # containerd quotes with \"
        before = self._count(registered)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=mokka_env())
        wait_until(lambda: self._count(registered) > before,
                   lambda: f"the plugin to register; its log:\n{open(self.log_path).read()}", timeout=30)
        # containerd logs "registered" before Configure/Synchronize: wait for "connected".
        wait_until(lambda: self._count(f'plugin \\"{PLUGIN[0]}-{PLUGIN[1]}\\" connected') > before,
                   "the plugin to connect", timeout=30)
        self.connected = True

    def stop(self) -> None:
        if self.proc is None:
            return
        closed = f'connection to plugin \\"{PLUGIN[0]}-{PLUGIN[1]}\\" closed'
        before = self._count(closed)
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        if not self.connected:
            return
        self.connected = False
        # The "without" block must not race containerd still holding the plugin.
        wait_until(lambda: self._count(closed) > before, "containerd to notice the plugin leaving",
                   timeout=10)


def injected(spec: dict) -> bool:
    mounts = [m["destination"] for m in spec.get("mounts", [])]
    devices = [d["path"] for d in (spec.get("linux") or {}).get("devices") or []]
    return "/opt/nvml-mock" in mounts and "/dev/nvidia0" in devices


def block(cri, label: str, size: int, with_plugin: bool, warm: int) -> tuple[list[float], list[float]]:
    """(untimed warm-up, timed) CreateContainer latencies in one fresh devices-annotated pod.

    The first ``warm`` calls are kept apart: a plugin process just (re)started pays
    one-off costs on its first calls (lazy imports, the node view's first build),
    which a long-running DaemonSet pod pays once per node, not per container."""
    pod_id, pod_config = run_pod(cri, label, annotations={names.ANNOTATION_DEVICES: "true"})
    times = []
    try:
        for i in range(warm + size):
            start = time.perf_counter()
            cid = create_container(cri, pod_id, pod_config, f"app-{i}", None)
            times.append((time.perf_counter() - start) * 1000)
            if i == 0 and injected(container_spec(cri, cid)) != with_plugin:
                raise RuntimeError(f"{label}: injection {'missing' if with_plugin else 'unexpected'}")
    finally:
        remove_pod(cri, pod_id)
    return times[:warm], times[warm:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=40, help="containers per side")
    parser.add_argument("--block", type=int, default=10, help="containers per alternating block")
    parser.add_argument("--warm", type=int, default=5, help="untimed calls opening each block")
    parser.add_argument("--gate", action="store_true",
                        help="as the DaemonSet runs it: a live agent, and the plugin asking its "
                             "/stagedz under the staging lock before each adjustment")
    args = parser.parse_args(argv)
    paths = runtime_paths()
    if paths is None:
        missing_prerequisite(f"the runtime cache (the real containerd in {runtime_dir() / 'paths.env'})",
                             "run bash .ci/fetch-runtime.sh")
    if os.geteuid() != 0:
        missing_prerequisite("root (containerd runs its pods as root)", "run it as root")

    build_native_libraries()
    zipapp = build_zipapp()
    work = tempfile.mkdtemp(prefix="mokka-bench-nri-rt-")
    node_root = os.path.join(work, "node")
    os.makedirs(node_root)
    results: dict[bool, list[float]] = {False: [], True: []}
    firsts: list[float] = []                # first CreateContainer after each registration
    rss = None
    agent(node_root, "--once")
    gate, daemon = [], None
    if args.gate:
        # The staged tree stays; a live agent now serves /stagedz and holds the lock.
        lock, port = os.path.join(work, "staging.lock"), 19499
        daemon = subprocess.Popen(
            [sys.executable, "-m", "mokka", "node-agent", "--host-root", node_root, "--profile", "t4",
             "--health-addr", f"127.0.0.1:{port}", "--staging-lock-path", lock],
            env=mokka_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        gate = ["--agent-staged-url", f"http://127.0.0.1:{port}/stagedz", "--staging-lock-path", lock]
        wait_until(lambda: _status(f"http://127.0.0.1:{port}/stagedz") == 200,
                   "the agent's /stagedz 200", timeout=30)
    try:
        with Containerd(paths, os.path.join(work, "containerd")) as ctrd:
            plugin = Plugin(zipapp, ctrd, node_root, gate)
            cri = ctrd.client()
            try:
                # First-use costs land in neither side: containerd's first snapshots and
                # cgroups, and the plugin's first start (shiv unpacks the zipapp into its
                # cache, containerd sets up its first NRI plugin) - that made a whole first
                # "with" block ~3x slower than later ones in trial runs.
                block(cri, "warmup", 0, False, 3)
                plugin.start()
                block(cri, "warmup-plugin", 0, True, args.warm)
                plugin.stop()
                n = 0
                while len(results[True]) < args.count:
                    size = min(args.block, args.count - len(results[True]))
                    results[False] += block(cri, f"without-{n}", size, False, args.warm)[1]
                    plugin.start()
                    warm, timed = block(cri, f"with-{n}", size, True, args.warm)
                    firsts.append(warm[0])
                    results[True] += timed
                    if len(results[True]) >= args.count:
                        rss = proc_status(plugin.proc.pid)       # after all its work, still running
                    plugin.stop()
                    n += 1
            finally:
                plugin.stop()
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(30)
        agent(node_root, "--teardown")
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(os.path.dirname(zipapp), ignore_errors=True)

    without, with_ = (statistics.median(results[k]) for k in (False, True))
    added = with_ - without
    print(f"staging gate: {'on (live agent, /stagedz + lock per container)' if args.gate else 'off'}")
    print(f"CRI CreateContainer on containerd 1.7.24 (NRI on), devices-annotated pod, "
          f"{args.count} per side in alternating blocks of {args.block} (each after {args.warm} untimed)")
    print(f"{'':<22}{'median ms':>10}{'p90 ms':>9}{'max ms':>9}")
    for label, key in (("without plugin", False), ("with mokka plugin", True)):
        s = sorted(results[key])
        print(f"{label:<22}{statistics.median(s):10.2f}{s[int(len(s) * 0.9) - 1]:9.2f}{s[-1]:9.2f}")
    print(f"added by plugin: {added:+.2f} ms ({with_ / without:.2f}x), target <= {TARGET_ADDED_MS} ms: "
          f"{'met' if added <= TARGET_ADDED_MS else 'MISSED'}")
    print("first CreateContainer after each (re)registration (untimed above): "
          + ", ".join(f"{t:.1f}" for t in firsts) + " ms")
    mib = rss["VmRSS"] / 1024
    print(f"plugin VmRSS after the run: {mib:.1f} MiB (VmHWM {rss['VmHWM'] / 1024:.1f} MiB), "
          f"target <= {TARGET_RSS_MIB:.0f} MiB: {'met' if mib <= TARGET_RSS_MIB else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
