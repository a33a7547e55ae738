"""The README's first command on a fresh clone: its wall time, N runs, against the same
steps without the native build, measured in the same run (target <= 60 s on a quiet
2-core machine).

    python3 bench/first_command.py [--runs N] [--python PYTHON] [--timeout S]

Each run starts from a fresh copy of the checkout's git-tracked files as they are in the
work tree (``git ls-files``: what a clone of this tree holds; no build/, no .venv, no
dist/), and runs the quick start's first command as written (``tests/setup/readme.py``
reads it out of README.md) under ``bash -c`` in that copy (at one path for every run), in
a clean environment (``env -i``): a HOME of its own that is empty (so no zig cache and no
shiv root from an earlier run: the native libraries are compiled from nothing, as on a new
machine), TMPDIR under the bench's temp dir (so the ``mktemp -d`` root the command stages
is there, and is torn down by ``dist/mokka node-agent --teardown`` after the run), a PATH
whose ``python3`` is PYTHON (default /usr/bin/python3, the base system's) and then
/usr/local/bin, /usr/bin and /bin, and the host's PIP_* and proxy variables (how pip
reaches its index here).

pip's cache: one download cache of the bench's own (PIP_CACHE_DIR under the bench's temp
dir; the user's ~/.cache/pip is neither read nor written), shared by every run. A first
run, not counted toward the target, with that cache empty fills it, and its time is
printed as the cold figure (it measures the network as much as Mokka). The N timed runs
then find pip's downloads (the largest: ziglang's wheel, the compiler) and built wheels in
the cache, as a user's second clone would; a first clone on a new machine pays the cold
figure instead.

The baseline is the same command from the same fresh copy, with one difference: the copy's
build/native holds the libraries the cold run built (from the same tree), so
native/build.py finds every library's inputs unchanged and compiles nothing. Everything
else runs alike: the venv, pip installing the pins, native/build.py generating its headers
and hashing every input, shiv packing the zipapp, staging and nvidia-smi. The difference
between the two is the native build alone. Full runs and baseline runs go in turns (the
order flipped every round), so a busy machine's swings hit both alike. The bench stops if
a baseline run builds a library or a full run builds none.

Printed: each run's seconds and its longest silence (the longest gap between two reads of
output, and the line it followed: how well the command prints progress), the median, the
baseline's, their ratio, the load average before and after (os.getloadavg) and the number
of CPUs this process may use. Exit 1 when the median misses 60 s, 2 when something the
bench needs is missing.

Outside its temp dir the command touches only what it does as written: ./shivfile packs
from the fixed path /tmp/mokka-shiv-src (locked by /tmp/mokka-shiv-src.lock, and removed
after) so the zipapp's bytes do not depend on a random path.
"""

from __future__ import annotations

import argparse
import os
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, missing_prerequisite, require_test_environment  # noqa: E402

require_test_environment()
sys.path.insert(0, REPO)
from tests.setup import readme  # noqa: E402

TARGET_S = 60.0
#: Host variables passed through: how pip reaches its index on this machine.
PASSED = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
          "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")


def copy_checkout(dest: str) -> None:
    """The checkout's git-tracked files as they are in the work tree."""
    listed = subprocess.run(["git", "-C", REPO, "ls-files", "-z"], capture_output=True, check=True,
                            timeout=60).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = os.path.join(REPO, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel), follow_symlinks=False)


class Run:
    """One run of the first command from a fresh copy under ``work/run``: the same path for
    every run, since native/build.py's inputs include the compiler's command line, which
    names the checkout's folders."""

    def __init__(self, work: str, name: str, python: str, pip_cache: str, native: str | None):
        self.name = name
        self.base = os.path.join(work, "run")
        self.clone = os.path.join(self.base, "mokka")
        copy_checkout(self.clone)
        if native:
            shutil.copytree(native, os.path.join(self.clone, "build", "native"), symlinks=True)
        home, self.tmp, bin_dir = (os.path.join(self.base, d) for d in ("home", "tmp", "bin"))
        for d in (home, self.tmp, bin_dir):
            os.makedirs(d)
        os.symlink(python, os.path.join(bin_dir, "python3"))
        self.env = {"HOME": home, "TMPDIR": self.tmp, "PIP_CACHE_DIR": pip_cache,
                    "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
                    **{k: v for k, v in os.environ.items()
                       if (k.startswith("PIP_") and k != "PIP_CACHE_DIR") or k in PASSED}}

    def time(self, timeout: float) -> tuple[float, tuple[float, str], str]:
        """Seconds, the longest silence (seconds, and the last line before it), and the output
        (stdout and stderr)."""
        argv = ["env", "-i", *(f"{k}={v}" for k, v in self.env.items()), "bash", "-c",
                readme.first_command()]
        start = last = time.monotonic()
        silence, before = 0.0, 0
        chunks = []
        proc = subprocess.Popen(argv, cwd=self.clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        fd = proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                left = start + timeout - time.monotonic()
                if left <= 0 or not sel.select(left):
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    self.unstage(check=False)
                    raise SystemExit(f"bench/first_command.py: the {self.name} run: no end after "
                                     f"{timeout:.0f} s; last output: "
                                     f"{b''.join(chunks)[-500:].decode(errors='replace')}")
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                now = time.monotonic()
                if now - last > silence:
                    silence, before = now - last, sum(map(len, chunks))
                last = now
                chunks.append(chunk)
            proc.stdout.close()
            proc.wait(timeout=max(1.0, start + timeout - time.monotonic()))
        took = time.monotonic() - start
        raw = b"".join(chunks)
        if took - (last - start) > silence:
            silence, before = took - (last - start), len(raw)
        output = raw.decode(errors="replace")
        said = raw[:before].decode(errors="replace").rstrip("\n").rpartition("\n")[2]
        if proc.returncode != 0 or "NVIDIA-SMI" not in output:
            self.unstage(check=False)
            raise SystemExit(f"bench/first_command.py: the {self.name} run: exit {proc.returncode}: "
                             f"{output[-2000:]}")
        if ("native: building" in output) != (self.name != "baseline"):
            raise SystemExit(f"bench/first_command.py: the {self.name} run "
                             f"{'rebuilt' if self.name == 'baseline' else 'did not build'} the native "
                             f"libraries: {output[-2000:]}")
        return took, (silence, said), output

    def unstage(self, check: bool = True) -> None:
        """Tear down the root the command staged under its mktemp, if it got that far."""
        app = os.path.join(self.clone, "dist", "mokka")
        for d in os.listdir(self.tmp):
            root = os.path.join(self.tmp, d)
            if os.path.isfile(app) and os.path.isdir(os.path.join(root, "var", "lib", "nvml-mock")):
                subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in self.env.items()), app,
                                "node-agent", "--teardown", "--host-root", root], capture_output=True,
                               check=check, timeout=120)

    def tear_down(self, keep_native: str | None = None) -> None:
        """Unstage, keep build/native if asked, and remove the copy."""
        self.unstage()
        if keep_native:
            shutil.copytree(os.path.join(self.clone, "build", "native"), keep_native, symlinks=True)
        shutil.rmtree(self.base)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """A command line the bench cannot run: one line, exit 2."""
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def silent(silence: tuple[float, str]) -> str:
    seconds, after = silence
    return f"longest silence {seconds:4.1f} s, after " + (repr(after[:60]) if after else "the start")


def main() -> int:
    parser = Parser(prog="bench/first_command.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each kind (default 3)")
    parser.add_argument("--python", default="/usr/bin/python3",
                        help="the python3 the command finds on PATH (default /usr/bin/python3)")
    parser.add_argument("--timeout", type=float, default=1200.0,
                        help="seconds one run may take before the bench stops (default 1200)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not os.access(args.python, os.X_OK):
        missing_prerequisite(f"a python3 at {args.python}", "run apt-get install python3 python3-venv, "
                             "or name one with --python")
    cpus = len(os.sched_getaffinity(0))
    print(f"machine: {cpus} CPUs (nproc), load {load()} before; python3: {args.python}")
    work = tempfile.mkdtemp(prefix="mokka-bench-first-")
    pip_cache = os.path.join(work, "pip-cache")
    native = os.path.join(work, "native")
    try:
        cold = Run(work, "cold", args.python, pip_cache, None)
        took, silence, _ = cold.time(args.timeout)
        cold.tear_down(keep_native=native)
        print(f"{'cold (empty pip cache, network)':<44} {took:6.1f} s  {silent(silence)}",
              flush=True)
        full: list[float] = []
        base: list[float] = []
        for i in range(args.runs):
            kinds = [("full", None, full), ("baseline", native, base)]
            for kind, prebuilt, times in (kinds if i % 2 == 0 else kinds[::-1]):
                run = Run(work, kind, args.python, pip_cache, prebuilt)
                took, silence, _ = run.time(args.timeout)
                run.tear_down()
                times.append(took)
                print(f"{kind + ' run ' + str(i + 1):<44} {took:6.1f} s  {silent(silence)}",
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    median, baseline = statistics.median(full), statistics.median(base)
    met = median <= TARGET_S
    print(f"{'first command (warm pip cache)':<44} " + ", ".join(f"{t:.1f}" for t in full)
          + f" s; median {median:.1f} s")
    print(f"{'baseline: the same without the native build':<44} " + ", ".join(f"{t:.1f}" for t in base)
          + f" s; median {baseline:.1f} s")
    print(f"{'first command / baseline':<44} {median / baseline:.2f}x  (the native build: "
          f"{median - baseline:.1f} s)")
    print(f"target <= {TARGET_S:.0f} s: {'met' if met else 'MISSED'}  ({cpus} CPUs, load {load()} after)")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
