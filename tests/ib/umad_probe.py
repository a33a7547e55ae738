"""A libibumad consumer in a real process, for libibmockumad's tests: threads that
open ports and run NodeDescription round trips at once, some sharing one port.

    python3 umad_probe.py LIBIBUMAD THREADS ROUNDS LID...
    python3 umad_probe.py LIBIBUMAD shared 0 LID    (one port, two readers: see shared())

Loads the real libibumad (global, as a tool does), with the shim preloaded by
the caller. Prints one JSON object: the node descriptions each thread got.
"""

from __future__ import annotations

import ctypes
import json
import struct
import sys
import threading


def request(hdr: int, lid: int, tid: int):
    buf = ctypes.create_string_buffer(hdr + 256)
    struct.pack_into(">IIH", buf, 20, 0, 0, lid)                    # addr: qpn, qkey, lid
    struct.pack_into(">BBBBHHQHHI", buf, hdr, 1, 1, 1, 1, 0, 0, tid, 0x10, 0, 0)
    return buf


def shared(glob, hdr: int, lid: int) -> dict:
    """Thread A waits on the port forever; meanwhile the main thread's own 100 ms wait
    on the same port must time out on its own, and A then gets the answer."""
    port = glob.umad_open_port(None, 0)
    agent = glob.umad_register(port, 1, 1, 0, None)
    got = {}

    def reader():
        rbuf = ctypes.create_string_buffer(hdr + 256)
        length = ctypes.c_int(256)
        got["agent"] = glob.umad_recv(port, rbuf, ctypes.byref(length), -1)
        got["desc"] = rbuf.raw[hdr + 64:hdr + 128].rstrip(b"\0").decode()

    a = threading.Thread(target=reader)
    a.start()
    rbuf = ctypes.create_string_buffer(hdr + 256)
    length = ctypes.c_int(256)
    timed_out = glob.umad_recv(port, rbuf, ctypes.byref(length), 100)
    sent = glob.umad_send(port, agent, request(hdr, lid, 1), 256, 1000, 0)
    a.join(30)
    return {"timed_out": timed_out, "sent": sent, "reader": got, "alive": a.is_alive()}


def main() -> int:
    umad = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
    glob = ctypes.CDLL(None)                 # what a tool binds to: the preloaded shim first
    umad.umad_size.restype = ctypes.c_size_t
    hdr = umad.umad_size()
    assert glob.umad_init() == 0
    if sys.argv[2] == "shared":
        print(json.dumps(shared(glob, hdr, int(sys.argv[4], 0)), sort_keys=True))
        return 0
    threads, rounds, lids = int(sys.argv[2]), int(sys.argv[3]), [int(x, 0) for x in sys.argv[4:]]
    results: dict[str, list] = {}
    errors: list[str] = []

    def round_trips(name: str, port: int, agent: int, lid: int, n: int) -> None:
        got = []
        for i in range(n):
            buf = request(hdr, lid, (hash(name) & 0xFFFF) << 16 | i)
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
