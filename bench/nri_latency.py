"""CreateContainer latency of the real nri-plugin process vs a Go plugin on the official library.

Starts the fake runtime (tests/nri/fakeruntime.py, real wire format), runs
``python -m mokka nri-plugin`` against it exactly as the DaemonSet would
(whatever handler that command wires) and, on the same peer, the Go baseline
plugin (bench/nri_go_stub, containerd/nri v0.6.1 pkg/stub; built offline by
bench/fetch-go-baseline.sh, which this script runs - it is a no-op once built).
Times N sequential CreateContainer calls of realistic 4-12 KB requests, as
containerd 1.7 makes them one at a time. Both plugins get the same requests,
interleaved call by call (alternating who goes first), so drift in machine
load hits both alike. Targets: our p50 <= 1.3x Go's, p99 <= 2x.

    python bench/nri_latency.py [--count 1000] [--seed 1] [--no-go]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GO_DIR = os.path.join(os.path.expanduser("~"), ".cache", "mokka-go-baseline")
FETCH = os.path.join(ROOT, "bench", "fetch-go-baseline.sh")
TARGETS = {"p50": 1.3, "p99": 2.0}
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests", "nri")]

from fakeruntime import FakeRuntime, remove_socket_dir, short_socket_path  # noqa: E402
from workload import request  # noqa: E402

from mokka.nri.codec import ttrpc  # noqa: E402

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-go", action="store_true", help="skip the Go baseline")
    args = parser.parse_args(argv)
    rnd = random.Random(args.seed)
    payloads = [request(i, rnd.randint(4096, 12288), rnd) for i in range(args.count)]
    go_bin, why = (None, "--no-go given") if args.no_go else go_baseline()

    path = short_socket_path()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "NRI_PLUGIN_"))}
    env["PYTHONPATH"] = ROOT
    plugins = {"mokka": [sys.executable, "-m", "mokka", "nri-plugin", f"--socket-path={path}",
                         "--health-addr=", "--log-level=error"]}
    if go_bin:
        plugins["go"] = [go_bin, f"--socket-path={path}", "--plugin-index=20"]
    latencies: dict[str, list[float]] = {name: [] for name in plugins}
    replies: dict[str, int] = {}
    with FakeRuntime(path) as runtime, contextlib.ExitStack() as stack:
        links = {}
        # One at a time, so link number n is the n-th plugin started.
        for n, (name, argv_) in enumerate(plugins.items(), 1):
            proc = subprocess.Popen(argv_, env=env, cwd=ROOT)
            stack.callback(lambda p=proc: (p.terminate(), p.wait(10)))
            links[name] = runtime.wait_link(n, timeout=30)
            links[name].handshake()
        for name, link in links.items():
            for p in payloads[:20]:                           # warm-up
                resp = link.wait_response(link.start_call("CreateContainer", p))
            replies[name] = len(resp.payload)
        order = list(links.items())
        for i, p in enumerate(payloads):
            for name, link in (order if i % 2 == 0 else order[::-1]):
                start = time.perf_counter()
                resp = link.wait_response(link.start_call("CreateContainer", p))
                latencies[name].append((time.perf_counter() - start) * 1000)
                assert resp.code == ttrpc.OK, (name, resp)
    remove_socket_dir(path)

    sizes = sorted(len(p) for p in payloads)
    print(f"CreateContainer x{len(payloads)} per plugin, requests {sizes[0]}-{sizes[-1]} bytes "
          f"(median {statistics.median(sizes):.0f}), same loopback peer, calls interleaved")
    print("adjustment reply bytes: " + ", ".join(f"{n} {b}" for n, b in replies.items()))
    ours = summary(latencies["mokka"])
    print(f"{'plugin':<26}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    print(f"{'mokka nri-plugin (python)':<26}" + "".join(f"{ours[k]:9.3f}" for k in ours))
    if "go" not in latencies:
        print(f"Go baseline unavailable: {why}")
        return 0
    go = summary(latencies["go"])
    print(f"{'go nri v0.6.1 pkg/stub':<26}" + "".join(f"{go[k]:9.3f}" for k in go))
    print(f"{'ratio mokka/go':<26}" + "".join(f"{ours[k] / go[k]:8.2f}x" for k in go))
    for key, target in TARGETS.items():
        ratio = ours[key] / go[key]
        print(f"{key}: {ratio:.2f}x Go, target <= {target}x: {'met' if ratio <= target else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
