"""The NRI request path in one process: no socket, no thread, no runtime.

Frames in, the ttrpc codec (``Connection``), the CreateContainerRequest
decoded, the plugin's pipeline as ``mokka.nri.compose`` wires it (convert,
plan, gate, remembered decision, encode), the reply framed: per request, over
realistic 4-12 KB requests of devices-annotated pods (tests/nri/workload.py),
against a node the real agent staged (``node-agent --once``) under a scratch
root. Fed in 64 KiB reads as the driver's socket reads them. Prints wall and
CPU time per request, the best and the median of the rounds.

    python bench/nri_request_path.py [--count 1000] [--rounds 7] [--profile gb300] [--seed 1]
                                     [--node ROOT]

``--node ROOT`` decides against a node already staged under ROOT (left as it is), so
two checkouts can be compared on the very same tree.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import build_native_libraries, require_test_environment  # noqa: E402

require_test_environment()

from mokka.core import names  # noqa: E402
from mokka.core.overlay import host_overlay  # noqa: E402
from mokka.nri.codec.conn import Connection  # noqa: E402
from mokka.nri.codec.mux import NEED_DATA, PLUGIN_CONN  # noqa: E402
from mokka.nri.compose import HostPaths, Settings, make_handler  # noqa: E402
from mokka.nri.inject.model import Config  # noqa: E402
from mokka.nri.plugin import PLUGIN_SERVICE, PluginConfig  # noqa: E402
from mokka.nri.proto import nri_pb2  # noqa: E402
from mokka.nri.runtime_info import RuntimeInfo  # noqa: E402
from tests.nri.workload import request  # noqa: E402

READ = 65536


def staged_node(root: str, profile: str) -> None:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-m", "mokka", "node-agent", "--once", "--host-root", root,
                    "--profile", profile, "--health-addr", "", "--container-runtime", "none"],
                   check=True, env=env, capture_output=True)


def settings_for(root: str) -> Settings:
    host = host_overlay(root, names.OVERLAY_HOST_PATH)
    return Settings(Config(overlay_host_path=host.root), PluginConfig(),
                    HostPaths(devices=host.dev, topology=host.topology,
                              cdi_spec=os.path.join(root, names.CDI_SPEC_DIR.lstrip("/"),
                                                    names.CDI_SPEC_MOCK_FILE),
                              imex_channels=host.imex_channels),
                    health_addr="", agent_staged_url="", staging_lock_path="")


def one_round(handle, wire: bytes, count: int) -> tuple[float, float, int]:
    """(wall ns, CPU ns, reply bytes) of serving every request in ``wire``."""
    conn, runtime, offset, served, replied = Connection(), RuntimeInfo(), 0, 0, 0
    wall, cpu = time.perf_counter_ns(), time.process_time_ns()
    while served < count:
        event = conn.next_event()
        if event is NEED_DATA:
            conn.receive_data(wire[offset:offset + READ])
            offset += READ
            continue
        req = nri_pb2.CreateContainerRequest.FromString(event.payload)
        out = handle(req.pod, req.container, runtime)
        replied += len(Connection.response_bytes(PLUGIN_CONN, event.stream_id, out or b""))
        served += 1
    return time.perf_counter_ns() - wall, time.process_time_ns() - cpu, replied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profile", default="gb300")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--node", help="a node already staged under this root")
    args = parser.parse_args(argv)
    rnd = random.Random(args.seed)
    payloads = [request(i, rnd.randint(4096, 12288), rnd) for i in range(args.count)]
    wire = b"".join(Connection.request_bytes(PLUGIN_CONN, 2 * i + 1, PLUGIN_SERVICE,
                                             "CreateContainer", p) for i, p in enumerate(payloads))
    root = args.node or tempfile.mkdtemp(prefix="mokka-bench-node-")
    try:
        if not args.node:
            build_native_libraries()
            staged_node(root, args.profile)
            # The node view trusts what it read only once it is older than its racy
            # window (2 s); a real node is staged long before its containers come.
            time.sleep(2.5)
        handle, _ = make_handler(settings_for(root))
        gc.freeze()                       # as the plugin does once it is wired
        one_round(handle, wire, args.count)                     # warm
        rounds = [one_round(handle, wire, args.count) for _ in range(args.rounds)]
    finally:
        if not args.node:
            subprocess.run([sys.executable, "-m", "mokka", "node-agent", "--teardown",
                            "--host-root", root, "--health-addr", ""], capture_output=True,
                           env=dict(os.environ, PYTHONPATH=ROOT))
            shutil.rmtree(root, ignore_errors=True)
    per = [(w / args.count / 1000, c / args.count / 1000) for w, c, _ in rounds]
    print(f"request path in one process: {args.count} CreateContainers of "
          f"{min(map(len, payloads))}-{max(map(len, payloads))} bytes, "
          f"{'the node at ' + root if args.node else args.profile + ' staged'}, "
          f"{rounds[0][2] // args.count} reply bytes each, {args.rounds} rounds")
    print(f"  wall per request: best {min(w for w, _ in per):.1f} us, "
          f"median {statistics.median(w for w, _ in per):.1f} us")
    print(f"  CPU per request:  best {min(c for _, c in per):.1f} us, "
          f"median {statistics.median(c for _, c in per):.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
