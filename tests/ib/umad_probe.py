"""A libibumad consumer in a real process, for libibmockumad's tests: threads that
open ports and run NodeDescription round trips at once, some sharing one port.

    python3 umad_probe.py LIBIBUMAD THREADS ROUNDS LID...

Loads the real libibumad (global, as a tool does), with the shim preloaded by
the caller. Prints one JSON object: the node descriptions each thread got.
"""

from __future__ import annotations

import ctypes
import json
import struct
import sys
import threading


def main() -> int:
    lib_path, threads, rounds, lids = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        [int(x, 0) for x in sys.argv[4:]]
    umad = ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)
    glob = ctypes.CDLL(None)                 # what a tool binds to: the preloaded shim first
    umad.umad_size.restype = ctypes.c_size_t
    hdr = umad.umad_size()
    assert glob.umad_init() == 0
    results: dict[str, list] = {}
    errors: list[str] = []

    def round_trips(name: str, port: int, agent: int, lid: int, n: int) -> None:
        got = []
        buf = ctypes.create_string_buffer(hdr + 256)
        for i in range(n):
            ctypes.memset(buf, 0, hdr + 256)
            struct.pack_into(">IIH", buf, 20, 0, 0, lid)            # addr: qpn, qkey, lid
            struct.pack_into(">BBBBHHQHHI", buf, hdr, 1, 1, 1, 1, 0, 0,
                             (hash(name) & 0xFFFF) << 16 | i, 0x10, 0, 0)
            if glob.umad_send(port, agent, buf, 256, 1000, 0) != 0:
                errors.append(f"{name}: send failed")
                return
            rbuf = ctypes.create_string_buffer(hdr + 256)
            length = ctypes.c_int(256)
            rc = glob.umad_recv(port, rbuf, ctypes.byref(length), 5000)
            if rc < 0:
                errors.append(f"{name}: recv {rc}")
                return
            status = struct.unpack_from("=I", rbuf, 4)[0]
            got.append((status, rbuf.raw[hdr + 64:hdr + 128].rstrip(b"\0").decode()))
        results[name] = sorted(set(map(tuple, got)))

    workers = []
    for t in range(threads):
        lid = lids[t % len(lids)]
        port = glob.umad_open_port(None, 0)
        agent = glob.umad_register(port, 1, 1, 0, None)
        if port < 0 or agent < 0:
            errors.append(f"open/register: {port} {agent}")
            continue
        workers.append(threading.Thread(target=round_trips, args=(f"t{t}", port, agent, lid, rounds)))
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print(json.dumps({"results": results, "errors": errors}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
