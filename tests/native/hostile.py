"""Nodes a workload has spoilt, and consumers run against them: what the hostile-file
tests (test_hostile_files.py, test_fuzz_hostile.py) share.

    stage_node(root, gpus)      a config directory with every document a workload can
                                write (profile, two overrides scopes, the
                                Xid events; each YAML and its companion); the env to use it
    restated(companion, body)   the companion with another body and a header that states it
                                truly: only the library's own checks can refuse it
    set_lines(path, lines)      the companion at path with ``key value`` lines set, restated
    measured(argv, env)         a consumer's Run: exit status, output, peak RSS (wait4),
                                None when it did not end within TIMEOUT_S of starting its work
    answered(argv, env)         measured, once more when it timed out: a busy machine is no hang
    Surveys(env)                probe.py serve started once with ``env`` (the library's
                                directory, the sanitizer's preload): .answered(env, scratch) is
                                a forked consumer's Run, with answered's one retry
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zlib
from dataclasses import dataclass

from mokka.agent import desired as ds
from mokka.core import names, xid
from mokka.engine import flatstate
from mokka.core import profile as prof
from tests.corpus import engine_cases as corpus
from tests.native.conftest import PROBE
from tests.peak import Launched

TIMEOUT_S = 2.0
#: How long an interpreter may take to start and load the library (a busy machine's).
STARTUP_S = 60.0
NODE_NAME = "worker-3"                 # corpus.TOPOLOGY puts it in clique 7 of rack A (compiled in)
OVERRIDDEN = "Overridden"


def stage_node(root: str, gpus: int = 2) -> str:
    """``root/config`` holding every document a workload can write; returns that directory.
    GPU 1's overrides rename it to OVERRIDDEN and give it a process."""
    profile = os.path.join(root, f"h100x{gpus}.yaml")
    with open(profile, "wb") as f:
        f.write(ds.with_num_devices(prof.read("h100")[1], gpus))
    env = corpus.stage(corpus.Case("hostile", profile, (), topology=corpus.TOPOLOGY, node_name=NODE_NAME), root)
    config_dir = os.path.dirname(env[names.ENV_NVML_CONFIG])
    corpus.write_overrides(config_dir, {None: "utilization: {gpu: 33}\n",
                                        1: f"name: {OVERRIDDEN}\ncpu_affinity: 0-3\n"
                                           "processes: [{pid: 4242, name: trainer, used_memory_mib: 100}]\n"})
    events, _, last = xid.next_events([], [xid.Injection(1, "GPU-1", "0000:4A:00.0", 48)])
    write_events(config_dir, *xid.render(events, last))
    os.makedirs(os.path.join(root, "devroot", "dev"), exist_ok=True)
    return config_dir


def node_env(config_dir: str) -> dict:
    """What a consumer of the node in ``config_dir`` gets (no MOCK_* of the caller)."""
    return {names.ENV_NVML_CONFIG: os.path.join(config_dir, names.PROFILE_FILE),
            names.ENV_DEV_ROOT: os.path.join(os.path.dirname(config_dir), "devroot")}


def write_events(config_dir: str, text: bytes, companion: bytes) -> None:
    """The Xid events document and its companion, companion first, as their writers do."""
    path = os.path.join(config_dir, names.XID_EVENTS_FILE)
    for target, data in ((flatstate.companion_path(path), companion), (path, text)):
        tmp = target + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, target)


def restated(data: bytes, body: bytes) -> bytes:
    """``data`` (a companion) with ``body`` after a header that states it truly."""
    head = data.split(b"\n", 3)[:2]
    return b"\n".join(head) + f"\nbody {len(body)} crc32:{zlib.crc32(body):08x}\n".encode() + body


def set_lines(path: str, lines: list[bytes]) -> None:
    """The companion at ``path`` with each ``key value`` of ``lines`` set (added or replaced,
    in key order), restated, as a workload that knows the format would write it."""
    data = open(path, "rb").read()
    table = {line.split(b" ", 1)[0]: line for line in data.split(b"\n", 3)[3].split(b"\n")[:-1]}
    table.update({line.split(b" ", 1)[0]: line for line in lines})
    with open(path, "wb") as f:
        f.write(restated(data, b"\n".join(table[key] for key in sorted(table)) + b"\n"))


def drop_lines(path: str, keys: list[bytes]) -> None:
    """The companion at ``path`` without the lines of ``keys``, restated."""
    data = open(path, "rb").read()
    body = [line for line in data.split(b"\n", 3)[3].split(b"\n")[:-1] if line.split(b" ", 1)[0] not in keys]
    with open(path, "wb") as f:
        f.write(restated(data, b"\n".join(body) + b"\n"))


@dataclass
class Run:
    returncode: int | None          # None: it did not end within the timeout
    stdout: str
    stderr: str
    max_rss: int                    # bytes


def measured(argv: list[str], env: dict) -> Run:
    """The run and its own peak RSS (tests/peak.py: the consumer's, not this process's).
    The probe's clock starts when it says it has loaded the library (its interpreter's
    start is not the library's time); nvidia-smi's when it is started."""
    proc = Launched(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ready = threading.Event()
    out: list[bytes] = []
    err: list[bytes] = []

    def pump_out():
        for line in proc.stdout:
            out.append(line)
            ready.set()
        ready.set()
    readers = [threading.Thread(target=pump_out), threading.Thread(target=lambda: err.append(proc.stderr.read()))]
    for t in readers:
        t.start()
    try:
        started = ready.wait(STARTUP_S) if argv[1:2] == [PROBE] else True
        if not started:
            proc.kill()
        status, max_rss = proc.finish(TIMEOUT_S if started else 0)
    finally:
        for t in readers:
            t.join()
        proc.stdout.close()
        proc.stderr.close()
    text = b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace")
    return Run(status, *text, max_rss)


def answered(argv: list[str], env: dict) -> Run:
    run = measured(argv, env)
    return measured(argv, env) if run.returncode is None else run


class Surveys:
    """pynvml consumers forked from one interpreter that has imported pynvml and never
    loaded the library (probe.py serve): each is a fresh process whose first nvmlInit
    reads the node, at a fraction of an interpreter's start."""

    def __init__(self, env: dict):
        self.proc = subprocess.Popen([sys.executable, PROBE, "serve"], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def measured(self, env: dict, scratch: str) -> Run:
        files = {"stdout": os.path.join(scratch, "survey.out"), "stderr": os.path.join(scratch, "survey.err")}
        self.proc.stdin.write(json.dumps({"env": env, "timeout": TIMEOUT_S, **files}) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply, f"probe.py serve ended (exit {self.proc.poll()})"
        done = json.loads(reply)
        text = [open(path, "rb").read().decode(errors="replace") for path in files.values()]
        return Run(done["exit"], *text, done["max_rss"] if done["exit"] is not None else 0)

    def answered(self, env: dict, scratch: str) -> Run:
        run = self.measured(env, scratch)
        return self.measured(env, scratch) if run.returncode is None else run

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
