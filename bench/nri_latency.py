"""CreateContainer latency of the real nri-plugin process vs a Go plugin on the official library.

Starts the fake runtime (tests/nri/fakeruntime.py, real wire format), runs
``python -m mokka nri-plugin`` against it exactly as the DaemonSet would
(whatever handler that command wires) and, on the same peer, the Go baseline
plugin (bench/nri_go_stub, containerd/nri v0.6.1 pkg/stub; built offline by
bench/fetch-go-baseline.sh, which this script runs - it is a no-op once built).
Times N sequential CreateContainer calls of realistic 4-12 KB requests, as
containerd 1.7 makes them one at a time, in three scenarios: the repeated pod
(devices-annotated: overlay + env, a 518-byte adjustment), the varied mix
(tests/nri/workload.py MIX: pods with and without allocations, raw and CDI
evidence, MIG, the devices, infiniband and imex annotations, excluded
namespaces, opt-outs, different containers of one pod, ...) and an IMEX pod on
a node with --imex-channels staged channel nodes (2048: a ~130 KB adjustment;
the Go stub adds the same nodes). The Go stub decides only the devices and
imex annotations (an empty adjustment for the rest of the mix), so on the mix
it does less work than mokka. Both plugins get the same requests, interleaved
call by call (alternating who goes first), so drift in machine load hits both
alike. Then the injected CreateContainers per second when the runtime
pipelines --pipelined requests, --window of them outstanding at a time.
Targets: our p50 and p99 <= 1.0x Go's on the repeated pod and on the mix.

    python bench/nri_latency.py [--count 1000] [--imex-channels 2048] [--pipelined 2000]
                                [--window 32] [--seed 1] [--no-go]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_DIR = os.path.join(os.path.expanduser("~"), ".cache", "mokka-go-baseline")
FETCH = os.path.join(ROOT, "bench", "fetch-go-baseline.sh")
TARGETS = {"p50": 1.0, "p99": 1.0}
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import require_test_environment  # noqa: E402

require_test_environment()

from mokka.core import names  # noqa: E402
from mokka.nri.codec import ttrpc  # noqa: E402
from tests.nri.fakeruntime import FakeRuntime, remove_socket_dir, short_socket_path  # noqa: E402
from tests.nri.workload import MIX, mixed, request  # noqa: E402

def go_baseline() -> tuple[str | None, str]:
    """(binary, "") or (None, reason). Runs the fetch/build script (fast once built)."""
    res = subprocess.run(["bash", FETCH, GO_DIR], capture_output=True, text=True)
    binary = os.path.join(GO_DIR, "nri-go-stub")
    if res.returncode != 0 or not os.access(binary, os.X_OK):
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{FETCH} failed ({res.returncode}): {tail}"
    return binary, ""


def summary(latencies: list[float]) -> dict[str, float]:
    s = sorted(latencies)
    return {"p50": statistics.median(s), "p99": s[min(len(s) - 1, int(len(s) * 0.99))],
            "max": s[-1]}


def stage_imex(count: int) -> str | None:
    """A temp dir of ``count`` IMEX channel char nodes, or None without mknod."""
    directory = tempfile.mkdtemp(prefix="mokka-bench-imex-")
    try:
        for n in range(count):
            os.mknod(os.path.join(directory, f"{names.IMEX_CHANNEL_PREFIX}{n}"),
                     stat.S_IFCHR | 0o666, os.makedev(234, n))
    except PermissionError:
        shutil.rmtree(directory)
        return None
    # The node view trusts a directory's stat signature only once it is older
    # than its racy window (2 s); until then it rescans on every request. A
    # real node's channels are staged long before containers come.
    time.sleep(2.5)
    return directory


def cpu_ns(pid: int) -> int:
    """CPU time of every live thread of ``pid`` so far, in ns (schedstat: exact,
    and unlike wall time not inflated by other load on the machine)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
    return total


def timed_calls(links: dict, payloads: list[bytes], pids: dict) -> tuple[dict, dict, dict]:
    """Sequential calls, interleaved across plugins: (latencies ms, reply bytes,
    plugin CPU µs per call)."""
    replies = {}
    for name, link in links.items():
        for p in payloads[:20]:                               # warm-up
            resp = link.wait_response(link.start_call("CreateContainer", p))
        replies[name] = len(resp.payload)
    latencies: dict[str, list[float]] = {name: [] for name in links}
    order = list(links.items())
    cpu_before = {name: cpu_ns(pid) for name, pid in pids.items()}
    for i, p in enumerate(payloads):
        for name, link in (order if i % 2 == 0 else order[::-1]):
            start = time.perf_counter()
            resp = link.wait_response(link.start_call("CreateContainer", p))
            latencies[name].append((time.perf_counter() - start) * 1000)
            assert resp.code == ttrpc.OK, (name, resp)
    cpu = {name: (cpu_ns(pid) - cpu_before[name]) / 1000 / len(payloads)
           for name, pid in pids.items()}
    return latencies, replies, cpu


def pipelined(link, payloads: list[bytes], window: int) -> float:
    """Injected CreateContainers per second with ``window`` requests outstanding.

    Bounded, because the Go multiplexer closes the socket when 256 frames queue
    up on one connection (a 4-12 KB request is 2-3 frames).
    """
    start = time.perf_counter()
    outstanding: list[int] = []
    for p in payloads:
        if len(outstanding) == window:
            resp = link.wait_response(outstanding.pop(0), timeout=120)
            assert resp.code == ttrpc.OK and resp.payload, resp
        outstanding.append(link.start_call("CreateContainer", p))
    for sid in outstanding:
        resp = link.wait_response(sid, timeout=120)
        assert resp.code == ttrpc.OK and resp.payload, resp
    return len(payloads) / (time.perf_counter() - start)


def report(title: str, latencies: dict, replies: dict, cpu: dict, targets: bool = True) -> None:
    print(f"\n{title}")
    print("adjustment reply bytes (last warm-up call): "
          + ", ".join(f"{n} {b}" for n, b in replies.items()))
    print("plugin CPU per call (all threads): "
          + ", ".join(f"{n} {us:.0f} us" for n, us in cpu.items()))
    ours = summary(latencies["mokka"])
    print(f"{'plugin':<26}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    print(f"{'mokka nri-plugin (python)':<26}" + "".join(f"{ours[k]:9.3f}" for k in ours))
    gated = summary(latencies[GATED]) if GATED in latencies else None
    if gated:
        print(f"{'mokka, staging gate on':<26}" + "".join(f"{gated[k]:9.3f}" for k in gated))
    if "go" not in latencies:
        return
    go = summary(latencies["go"])
    print(f"{'go nri v0.6.1 pkg/stub':<26}" + "".join(f"{go[k]:9.3f}" for k in go))
    print(f"{'ratio mokka/go':<26}" + "".join(f"{ours[k] / go[k]:8.2f}x" for k in go))
    if gated:
        print(f"{'ratio gated mokka/go':<26}" + "".join(f"{gated[k] / go[k]:8.2f}x" for k in go))
    for key, target in (TARGETS.items() if targets else ()):
        ratio = ours[key] / go[key]
        print(f"{key}: {ratio:.2f}x Go, target <= {target}x: {'met' if ratio <= target else 'MISSED'}")


#: The plugin run with the staging gate (--gate): what the chart deploys.
GATED = "mokka-gated"

AGENT = """
import sys, time
from mokka.agent.health import Health
from mokka.agent.server import ProbeServer
health = Health()
health.stage_finished(1, "bench", {})
ProbeServer(sys.argv[1], health).start()
print("serving", flush=True)
time.sleep(3600)
"""


def staged_agent(stack: contextlib.ExitStack, env: dict) -> tuple[str, str]:
    """(/stagedz URL, staging lock path): the node agent's own probe server,
    staged, in a process of its own as in the pod, and a lock file beside it."""
    from tests.netutil import free_port
    port = free_port()
    directory = tempfile.mkdtemp(prefix="mokka-bench-gate-")
    stack.callback(shutil.rmtree, directory, True)
    proc = subprocess.Popen([sys.executable, "-c", AGENT, f"127.0.0.1:{port}"], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    stack.callback(lambda: (proc.terminate(), proc.wait(10)))
    assert proc.stdout.readline().strip() == "serving"
    return f"http://127.0.0.1:{port}/stagedz", os.path.join(directory, "staging.lock")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--imex-channels", type=int, default=2048)
    parser.add_argument("--pipelined", type=int, default=2000)
    parser.add_argument("--window", type=int, default=32,
                        help="requests outstanding in the pipelined phase")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-go", action="store_true", help="skip the Go baseline")
    parser.add_argument("--gate", action="store_true",
                        help="also time a third plugin with the staging gate on (shared lock + "
                             "GET /stagedz per request, against the agent's probe server), as "
                             "the chart deploys it; the Go stub has no such check")
    args = parser.parse_args(argv)
    rnd = random.Random(args.seed)
    payloads = [request(i, rnd.randint(4096, 12288), rnd) for i in range(args.count)]
    mix_payloads = mixed(args.count, rnd)
    imex_payloads = [request(i, rnd.randint(4096, 12288), rnd,
                             annotations=(names.ANNOTATION_IMEX_CHANNELS,))
                     for i in range(args.count)]
    go_bin, why = (None, "--no-go given") if args.no_go else go_baseline()
    imex_dir = stage_imex(args.imex_channels) if args.imex_channels else None

    path = short_socket_path()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "NRI_PLUGIN_"))}
    env["PYTHONPATH"] = ROOT
    imex_flag = [f"--imex-channel-host-path={imex_dir}"] if imex_dir else []
    plugins = {"mokka": [sys.executable, "-m", "mokka", "nri-plugin", f"--socket-path={path}",
                         "--health-addr=", "--log-level=error", *imex_flag]}
    if go_bin:
        plugins["go"] = [go_bin, f"--socket-path={path}", "--plugin-index=20", *imex_flag]
    rates: dict[str, float] = {}
    with FakeRuntime(path) as runtime, contextlib.ExitStack() as stack:
        if args.gate:
            url, lock = staged_agent(stack, env)
            plugins[GATED] = [*plugins["mokka"], "--plugin-index=30", f"--agent-staged-url={url}",
                              f"--staging-lock-path={lock}"]
        links, pids = {}, {}
        # One at a time, so link number n is the n-th plugin started.
        for n, (name, argv_) in enumerate(plugins.items(), 1):
            proc = subprocess.Popen(argv_, env=env, cwd=ROOT)
            pids[name] = proc.pid
            stack.callback(lambda p=proc: (p.terminate(), p.wait(10)))
            links[name] = runtime.wait_link(n, timeout=30)
            links[name].handshake()
        small = timed_calls(links, payloads, pids)
        mix = timed_calls(links, mix_payloads, pids)
        large = timed_calls(links, imex_payloads, pids) if imex_dir else None
        for name, link in links.items():
            rates[name] = pipelined(link, [payloads[i % len(payloads)]
                                           for i in range(args.pipelined)], args.window)
    remove_socket_dir(path)
    if imex_dir:
        shutil.rmtree(imex_dir)

    sizes = sorted(len(p) for p in payloads)
    print(f"CreateContainer x{len(payloads)} per plugin and scenario, requests "
          f"{sizes[0]}-{sizes[-1]} bytes (median {statistics.median(sizes):.0f}), "
          f"same loopback peer, calls interleaved")
    report("repeated pod: devices-annotated (overlay + env)", *small)
    report(f"varied mix: {len(MIX)} cases in turn, {args.imex_channels} IMEX channel nodes staged",
           *mix)
    if large:
        report(f"IMEX pod, {args.imex_channels} channel nodes staged", *large, targets=False)
    else:
        print("\nIMEX scenario skipped: mknod not permitted (or --imex-channels 0)")
    print(f"\npipelined: {args.pipelined} CreateContainers, {args.window} outstanding at a time, "
          "injected per second")
    for name, rate in rates.items():
        print(f"  {name:<8}{rate:9.0f}/s")
    if "go" in rates:
        if rates["go"]:                                # none with --pipelined 0
            print(f"  ratio mokka/go {rates['mokka'] / rates['go']:.2f}x")
    else:
        print(f"Go baseline unavailable: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
