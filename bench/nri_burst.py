"""A burst of CreateContainers at the real nri-plugin process from a runtime that
pipelines them all and reads the replies slowly: tests/nri/test_plugin_load.py's burst at full size.

Starts ``python -m mokka nri-plugin`` against the fake runtime (real wire format),
with --imex-channels IMEX channel nodes staged so an IMEX pod's reply is large
(2048: ~130 KB, as on an h100 node with IMEX). The runtime stops reading until
the plugin reports overload, then reads 4 KiB every millisecond while the rest
of the burst goes in. Prints: error replies (must be 0), /healthz samples and how
many were 503 (must be 0), the plugin's peak RSS (VmHWM; bound 64 MiB), RSS
before and after the connection closes, the overload log lines, and the rate.
Not a test: tests/nri/test_plugin_load.py runs a smaller burst in CI.

    python bench/nri_burst.py [--count 10000] [--imex-channels 2048] [--imex-share 0.1]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.dirname(__file__)]

from common import require_test_environment  # noqa: E402

require_test_environment()

from nri_latency import stage_imex  # noqa: E402

from mokka.core import names  # noqa: E402
from mokka.nri.codec import ttrpc  # noqa: E402
from tests.netutil import free_port, http_get  # noqa: E402
from tests.nri.fakeruntime import FakeRuntime, remove_socket_dir, short_socket_path  # noqa: E402
from tests.nri.pluginproc import metric, status_kib  # noqa: E402
from tests.nri.workload import request  # noqa: E402
from tests.waiting import WaitTimedOut, wait_until  # noqa: E402

RSS_BOUND_KIB = 64 * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--imex-channels", type=int, default=2048)
    parser.add_argument("--imex-share", type=float, default=0.1,
                        help="fraction of the burst that are IMEX pods (large replies)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rnd = random.Random(args.seed)
    imex_dir = stage_imex(args.imex_channels) if args.imex_channels else None
    payloads = [request(i, rnd.randint(4096, 12288), rnd, annotations=(
        (names.ANNOTATION_DEVICES, names.ANNOTATION_IMEX_CHANNELS)
        if imex_dir and rnd.random() < args.imex_share else (names.ANNOTATION_DEVICES,)))
        for i in range(args.count)]
    path, port = short_socket_path(), free_port()
    log_path = os.path.join(tempfile.mkdtemp(prefix="mokka-burst-"), "plugin.log")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "NRI_PLUGIN_"))}
    env["PYTHONPATH"] = ROOT
    flags = [f"--imex-channel-host-path={imex_dir}"] if imex_dir else []
    runtime = FakeRuntime(path)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mokka", "nri-plugin",
                                 f"--socket-path={path}", f"--health-addr=127.0.0.1:{port}",
                                 "--log-format=plain", *flags], env=env, cwd=ROOT, stderr=log)
    try:
        link = runtime.wait_link(timeout=30)
        link.handshake()
        link.wait_response(link.start_call("CreateContainer", payloads[0]))
        baseline = status_kib(proc.pid, "VmRSS")
        link.pause()
        sids: list[int] = []
        start = time.perf_counter()
        sender = threading.Thread(target=lambda: sids.extend(
            link.start_call("CreateContainer", p) for p in payloads), daemon=True)
        sender.start()
        wait_until(lambda: metric(port, "overloaded") == 1, "the plugin to report overloaded",
                   timeout=60)
        link.resume(read_delay_s=0.001, recv_size=4096)
        health: list[int] = []
        done = threading.Event()

        def probe():
            while not done.wait(0.05):
                health.append(http_get(port, "/healthz")[0])
        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        sender.join()
        codes = [link.wait_response(sid, timeout=300).code for sid in sids]
        elapsed = time.perf_counter() - start
        done.set()
        prober.join(5)
        peak = status_kib(proc.pid, "VmHWM")
        link.close()
        again = runtime.wait_link(2, timeout=30)
        again.wait_registered()
        try:        # the figure is reported either way
            wait_until(lambda: status_kib(proc.pid, "VmRSS") <= baseline + 12 * 1024,
                       "RSS back within 12 MiB of its baseline", timeout=30)
        except WaitTimedOut:
            pass
        after = status_kib(proc.pid, "VmRSS")
        pauses = metric(port, "backpressure_pauses_total")
    finally:
        proc.terminate()
        proc.wait(10)
        runtime.close()
        remove_socket_dir(path)
        if imex_dir:
            shutil.rmtree(imex_dir)
    errors = sum(code != ttrpc.OK for code in codes)
    with open(log_path) as f:
        overload_lines = [line.strip() for line in f if "overload" in line]
    print(f"burst of {len(codes)} CreateContainers (imex share {args.imex_share:.0%}, "
          f"{args.imex_channels} channels), slow reader")
    print(f"  error replies:        {errors}")
    print(f"  /healthz samples:     {len(health)}, 503: {health.count(503)}")
    print(f"  peak RSS (VmHWM):     {peak / 1024:.1f} MiB (bound {RSS_BOUND_KIB // 1024} MiB: "
          f"{'met' if peak <= RSS_BOUND_KIB else 'EXCEEDED'})")
    print(f"  RSS baseline / after close: {baseline / 1024:.1f} / {after / 1024:.1f} MiB")
    print(f"  backpressure pauses:  {pauses}; overload log lines: {len(overload_lines)}")
    for line in overload_lines[:2]:
        print(f"    {line[:160]}")
    print(f"  answered in {elapsed:.1f} s ({len(codes) / elapsed:.0f}/s, paced by the slow reader)")
    return 0 if errors == 0 and peak <= RSS_BOUND_KIB and 503 not in health else 1


if __name__ == "__main__":
    sys.exit(main())
