"""A workload forging CUDA process records, as any user of the node can (the records
directory DIR is 01777; each user's records are in DIR/<uid>, which its user makes).

    records_forger.py hold DIR GPU COUNT PROCESSES USED NAME [--uid U] [--argv0 HEX] [--pid P]
                      [--into D]
        PROCESSES processes (as uid U), each holding COUNT records of GPU GPU in DIR/D
        (default: the uid's own directory, made 0755 if missing; ".": DIR itself) that claim
        USED bytes, pid P (default: its own) and the name of bytes NAME (hex), with both locks a writer holds
        (byte 0 by open file description, byte 1 by POSIX lock); each then execs sleep
        with argv[0] the bytes HEX, so /proc/<pid>/cmdline shows them. Prints one JSON
        line {"pids": [...]}, then waits for a line on stdin (or its end) and SIGKILLs them.
    records_forger.py junk DIR COUNT [--uid U] [--into D]
        COUNT empty files as uid U in DIR/D (default: DIR itself), half named as records of
        GPU 0, half not; exits.

Nothing here uses the library: the files are what a hostile container writes by hand.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import json
import os
import resource
import shutil
import signal
import struct
import sys

F_OFD_SETLK = 37


def _flock(start: int) -> bytes:
    return struct.pack("hhxxxxqqixxxx", fcntl.F_WRLCK, os.SEEK_SET, start, 1, 0)


def become(uid: int | None) -> None:
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def enter(top: int, into: str | None) -> int:
    """The directory ``into`` of the records directory ``top`` (None: this uid's own, made
    as the library makes it when missing)."""
    into = str(os.geteuid()) if into is None else into
    if into == ".":
        return top
    try:
        os.mkdir(into, 0o755, dir_fd=top)
        os.chmod(into, 0o755, dir_fd=top)      # mkdir honoured the umask
    except FileExistsError:
        pass
    return os.open(into, os.O_RDONLY | os.O_DIRECTORY, dir_fd=top)


def forge_one(directory: str, gpu: int, count: int, used: int, name: bytes, pid: int | None,
              argv0: bytes, uid: int | None, into: str | None, ready: int) -> None:
    """The child: its records, locked, then sleep holding them (never returns). ``ready``
    is closed on exec: the parent reads end-of-file once the child is ``sleep`` with its
    name (a process listed before that would show the interpreter's), a byte if it failed."""
    try:
        top = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)   # before the uid: no search of its parents
        become(uid)
        dfd = enter(top, into)
        for _ in range(count):
            fd = os.open(f"{gpu}.{os.urandom(8).hex()}", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)
            os.write(fd, b"mokka-process 1\npid %d\nused %d\nname %s\n" % (pid or os.getpid(), used, name))
            fcntl.fcntl(fd, F_OFD_SETLK, _flock(0))
            fcntl.fcntl(fd, fcntl.F_SETLK, _flock(1))
            os.set_inheritable(fd, True)       # the locks stay with the sleep it becomes
        sleep = (shutil.which("sleep") or "/bin/sleep").encode()
        argv = (ctypes.c_char_p * 3)(argv0, b"3600", None)   # libc's execv: os.execv refuses an empty argv[0]
        ctypes.CDLL(None, use_errno=True).execv(sleep, argv)
        raise OSError(ctypes.get_errno(), "execv failed")
    except BaseException as e:             # noqa: BLE001 - the parent reads the byte
        os.write(2, f"forger child: {e}\n".encode())
        os.write(ready, b"!")
    os._exit(1)


def hold(opts) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, opts.count + 64)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    pids = []
    for _ in range(opts.processes):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            forge_one(opts.dir, opts.gpu, opts.count, opts.used, opts.name, opts.pid,
                      bytes.fromhex(opts.argv0), opts.uid, opts.into, w)
        os.close(w)
        ok = os.read(r, 1) == b""
        os.close(r)
        pids.append(pid)
        if not ok:
            for p in pids:
                os.kill(p, signal.SIGKILL)
            return 1
    print(json.dumps({"pids": pids}), flush=True)
    sys.stdin.readline()
    for p in pids:
        os.kill(p, signal.SIGKILL)
        os.waitpid(p, 0)
    return 0


def junk(opts) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            top = os.open(opts.dir, os.O_RDONLY | os.O_DIRECTORY)
            become(opts.uid)
            dfd = enter(top, opts.into or ".")
            for i in range(opts.count):
                name = f"0.{os.urandom(8).hex()}" if i % 2 == 0 else f"junk-{i}"
                os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd))
        except BaseException as e:         # noqa: BLE001
            os.write(2, f"junk child: {e}\n".encode())
            os._exit(1)
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hold")
    h.add_argument("dir")
    h.add_argument("gpu", type=int)
    h.add_argument("count", type=int)
    h.add_argument("processes", type=int)
    h.add_argument("used", type=int)
    h.add_argument("name", type=bytes.fromhex)
    h.add_argument("--uid", type=int)
    h.add_argument("--argv0", default=b"forger".hex())
    h.add_argument("--pid", type=int)
    h.add_argument("--into")
    j = sub.add_parser("junk")
    j.add_argument("dir")
    j.add_argument("count", type=int)
    j.add_argument("--uid", type=int)
    j.add_argument("--into")
    opts = ap.parse_args(argv)
    return hold(opts) if opts.cmd == "hold" else junk(opts)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
