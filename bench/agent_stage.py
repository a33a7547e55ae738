"""Node-agent figures: Stage time at 8 vs 64 GPUs, swap-to-/stagedz latency, idle CPU, RSS.

Run: python bench/agent_stage.py   (needs a writable /tmp; uses scratch host roots)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_native_libraries, require_test_environment  # noqa: E402

require_test_environment()

from mokka.agent import desired as ds  # noqa: E402
from mokka.agent.build import AgentConfig, build_host, simulators  # noqa: E402
from mokka.core import log as mlog  # noqa: E402
from mokka.core import profile as prof  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
NODE = os.uname().nodename       # the agent names its node so without --node-name


def profile(count: int) -> bytes:
    return ds.with_num_devices(prof.read("a100")[1], count)


def stage_seconds(count: int, repeats: int = 3) -> tuple[float, float]:
    """(cold Stage of an empty root, re-Stage of a converged root), best of ``repeats``."""
    cold, warm = [], []
    desired = ds.build(1, "bench", "bench.yaml", profile(count))
    for _ in range(repeats):
        root = tempfile.mkdtemp(prefix="mokka-bench-")
        try:
            host = build_host(AgentConfig(host_root=root), mlog.get("bench"))
            sims = simulators(host)
            for bucket in (cold, warm):
                os.sync()             # each stage starts on a settled disk, not the last one's writeback
                t0 = time.perf_counter()
                for sim in sims:
                    sim.stage(desired)
                bucket.append(time.perf_counter() - t0)
            for sim in sims:
                sim.discard()
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return min(cold), min(warm)


def stagedz(port: int) -> dict:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stagedz", timeout=1) as r:
            return json.loads(r.read())
    except (urllib.error.URLError, OSError):
        return {}


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])          # utime + stime


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def wait_digest(port: int, digest: str, timeout: float = 30.0) -> float:
    t0 = time.perf_counter()
    while stagedz(port).get("digest") != digest:
        if time.perf_counter() - t0 > timeout:
            raise SystemExit(f"timed out waiting for digest {digest}")
        time.sleep(0.002)
    return time.perf_counter() - t0


def process_figures() -> dict:
    os.sync()                         # not timed against the stages' writeback
    work = tempfile.mkdtemp(prefix="mokka-bench-")
    root, path = os.path.join(work, "host"), os.path.join(work, "profile.yaml")
    os.mkdir(root)
    with open(path, "wb") as f:
        f.write(profile(8))
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mokka", "node-agent", "--host-root", root,
                             "--profile", path, "--health-addr", f"127.0.0.1:{port}",
                             "--resync-interval", "60"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        start = wait_digest(port, ds.build(0, path, path, profile(8), node_name=NODE).digest)
        swaps = []
        for count in (4, 8, 6):
            tmp = path + ".new"
            with open(tmp, "wb") as f:
                f.write(profile(count))
            t0 = time.perf_counter()
            os.replace(tmp, path)
            wait_digest(port, ds.build(0, path, path, profile(count), node_name=NODE).digest)
            swaps.append(time.perf_counter() - t0)
        before = cpu_ticks(proc.pid)
        time.sleep(5.0)
        idle = (cpu_ticks(proc.pid) - before) / CLK_TCK
        return {"first_staged_s": start, "swap_to_stagedz_s": swaps, "idle_cpu_s_over_5s": idle,
                "rss_mib": rss_mib(proc.pid)}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    build_native_libraries()
    s8, s64 = stage_seconds(8), stage_seconds(64)
    print(f"stage  8 GPUs: cold {s8[0] * 1000:7.1f} ms   converged {s8[1] * 1000:6.1f} ms")
    print(f"stage 64 GPUs: cold {s64[0] * 1000:7.1f} ms   converged {s64[1] * 1000:6.1f} ms")
    print(f"64/8 ratio (cold): {s64[0] / s8[0]:.2f}x  (per-GPU share excludes the fixed shim library)")
    fig = process_figures()
    print(f"agent start to /stagedz (8 GPUs): {fig['first_staged_s'] * 1000:.0f} ms")
    print("profile swap to /stagedz new digest: "
          + ", ".join(f"{s * 1000:.0f} ms" for s in fig["swap_to_stagedz_s"]))
    print(f"idle CPU over 5 s: {fig['idle_cpu_s_over_5s']:.3f} s")
    print(f"RSS: {fig['rss_mib']:.1f} MiB (target <= 45 MiB)")


if __name__ == "__main__":
    main()
