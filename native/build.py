"""Build the mock ``libnvidia-ml.so.1`` from native/nvml/: the one build entry.

    python3 native/build.py [--out DIR] [--arch x86_64|aarch64|all] [--sanitize]

Writes ``<out>/<arch>/libnvidia-ml.so.1`` (default out: build/native in the repo,
both architectures). The compiler is PyPI's ziglang (``python -m ziglang cc
-target <arch>-linux-gnu.2.17``), so one machine builds for x86_64 and aarch64
against glibc 2.17 with no system toolchain; nvml.h comes from PyPI's
nvidia-nvml-dev-cu12 (pins: native/requirements.txt). ``--sanitize`` builds for
this machine with the system gcc under ASan and UBSan instead (ziglang ships no
ASan runtime), into build/native-sanitize unless --out says otherwise.

Generated first, into ``<out>/gen``: ``mokka_names.h`` (native/gen_names.py)
and ``stubs.c`` (native/nvml/gen_stubs.py). A build whose inputs (sources,
generated files, nvml.h, flags, compiler version) hash as before is skipped:
the hash is kept beside the library as ``libnvidia-ml.so.1.inputs``.
Reproducible: the same inputs give the same bytes (no paths of this machine in
the output, no timestamps, no build id).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from mokka.core import names  # noqa: E402  (stdlib only: no install needed)

SRC = os.path.join(HERE, "nvml")
LIBRARY = names.NVML_LIB_FILE
ARCHES = ("x86_64", "aarch64")
GLIBC = "2.17"
PINS = os.path.join(HERE, "requirements.txt")

# What the output may contain instead of this machine's paths.
FIXED_SRC = "/mokka/native/nvml"
FIXED_GEN = "/mokka/native/gen"

CFLAGS = [
    "-std=c11", "-O2", "-fPIC", "-fvisibility=hidden",
    "-DNVML_NO_UNVERSIONED_FUNC_DEFS",
    "-Wall", "-Wextra", "-Werror",
]
SANITIZE_CFLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"]
LDFLAGS = ["-shared", f"-Wl,-soname,{LIBRARY}", "-Wl,--build-id=none"]
LIBS = ["-lpthread", "-ldl"]
# Only the NVML API leaves the library, and without symbol versions (as NVIDIA's).
VERSION_SCRIPT = "{\n    global: nvml*;\n    local: *;\n};\n"


class BuildError(Exception):
    """One line for the user: what is missing or failed, and what to do."""


def _pin(package: str) -> str:
    try:
        with open(PINS, encoding="utf-8") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line.lower().startswith(package.lower() + "=="):
                    return line
    except OSError:
        pass
    return package


def _missing(package: str, what: str) -> BuildError:
    return BuildError(f"{what} not found: pip install {_pin(package)} "
                      f"(or: python3 -m pip install -r native/requirements.txt)")


def nvml_header() -> str:
    """nvml.h from PyPI's nvidia-nvml-dev-cu12."""
    try:
        spec = importlib.util.find_spec("nvidia.nvml_dev")
    except ModuleNotFoundError:
        spec = None
    for base in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(base, "include", "nvml.h")
        if os.path.isfile(path):
            return path
    raise _missing("nvidia-nvml-dev-cu12", "nvml.h (package nvidia-nvml-dev-cu12)")


def zig_command() -> list[str]:
    if importlib.util.find_spec("ziglang") is None:
        raise _missing("ziglang", "the C compiler (package ziglang)")
    return [sys.executable, "-m", "ziglang", "cc"]


def compiler_version(sanitize: bool) -> str:
    if sanitize:
        try:
            out = subprocess.run(["gcc", "--version"], capture_output=True, text=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            raise BuildError("gcc not found: --sanitize builds with the system gcc "
                             "(apt-get install gcc)") from None
        return out.stdout.splitlines()[0]
    return "ziglang " + importlib.metadata.version("ziglang")


def host_arch() -> str:
    machine = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)


# --------------------------------------------------------------------------- generate


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def hand_written_sources(src: str = SRC) -> list[str]:
    return sorted(p for p in glob.glob(os.path.join(src, "*.c")) if os.path.basename(p) != "stubs.c")


def generate(gen_dir: str, header: str, src: str = SRC) -> None:
    """mokka_names.h, stubs.c and the linker version script into gen_dir."""
    os.makedirs(gen_dir, exist_ok=True)
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    names = _load(os.path.join(HERE, "gen_names.py"), "mokka_gen_names")
    stubs = _load(os.path.join(src, "gen_stubs.py"), "mokka_gen_stubs")
    write = stubs.write_if_changed          # one writer for every generated file
    write(os.path.join(gen_dir, "mokka_names.h"), names.render())
    with open(header, encoding="utf-8") as f:
        functions = stubs.parse_header(f.read())
    text = stubs.render(functions, stubs.handwritten(hand_written_sources(src)))
    write(os.path.join(gen_dir, "stubs.c"), text)
    write(os.path.join(gen_dir, "exports.map"), VERSION_SCRIPT)


# --------------------------------------------------------------------------- compile


def command(arch: str, gen_dir: str, header: str, output: str, *, sanitize: bool,
            src: str = SRC, extra_cflags: tuple[str, ...] = ()) -> list[str]:
    if sanitize:
        cc = ["gcc"]
        flags = CFLAGS + SANITIZE_CFLAGS
    else:
        cc = zig_command() + ["-target", f"{arch}-linux-gnu.{GLIBC}"]
        flags = CFLAGS + ["-s"]     # stripped, as NVIDIA's: the dynamic symbols are the API
    maps = []
    for real, fixed in ((src, FIXED_SRC), (gen_dir, FIXED_GEN), (os.path.dirname(header), "/nvml/include")):
        maps += [f"-ffile-prefix-map={real}={fixed}", f"-fdebug-prefix-map={real}={fixed}"]
    sources = hand_written_sources(src) + [os.path.join(gen_dir, "stubs.c")]
    return (cc + flags + list(extra_cflags) + maps
            + ["-I", src, "-I", gen_dir, "-I", os.path.dirname(header),
               "-include", os.path.join(src, "visibility.h")]
            + LDFLAGS + [f"-Wl,--version-script={os.path.join(gen_dir, 'exports.map')}"]
            + sources + LIBS + ["-o", output])


def inputs_hash(cmd: list[str], gen_dir: str, header: str, version: str, src: str = SRC) -> str:
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        digest.update(f"{label}\0{len(data)}\0".encode())
        digest.update(data)

    for path in sorted(glob.glob(os.path.join(src, "*"))):
        if os.path.isfile(path) and os.path.basename(path) != "stubs.c":
            with open(path, "rb") as f:
                add("src/" + os.path.basename(path), f.read())
    for name in ("mokka_names.h", "stubs.c", "exports.map"):
        with open(os.path.join(gen_dir, name), "rb") as f:
            add("gen/" + name, f.read())
    with open(header, "rb") as f:
        add("nvml.h", f.read())
    with open(os.path.abspath(__file__), "rb") as f:
        add("build.py", f.read())
    add("command", "\0".join(cmd[:-1]).encode())      # the output path is not an input
    add("compiler", version.encode())
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(path: str):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(out: str, arches: list[str], *, sanitize: bool = False, src: str = SRC,
          extra_cflags: tuple[str, ...] = (), log=None) -> list[str]:
    """Build (or keep) <out>/<arch>/libnvidia-ml.so.1 for each arch; return the paths."""
    out = os.path.abspath(out)
    src = os.path.abspath(src)
    header = nvml_header()
    if not sanitize:
        zig_command()
    version = compiler_version(sanitize)
    gen_dir = os.path.join(out, "gen")
    results: list[str] = []
    with _locked(os.path.join(out, ".lock")):
        generate(gen_dir, header, src)
        running = []
        for arch in arches:
            target = os.path.join(out, arch, LIBRARY)
            stamp = target + ".inputs"
            tmp = os.path.join(out, arch, f".{LIBRARY}.tmp")
            cmd = command(arch, gen_dir, header, tmp, sanitize=sanitize, src=src,
                          extra_cflags=extra_cflags)
            digest = inputs_hash(cmd, gen_dir, header, version, src)
            results.append(target)
            if os.path.isfile(target) and _read(stamp) == digest:
                if log:
                    log(f"up to date: {target}")
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            # A fixed working directory: nothing of the caller's cwd reaches the output.
            proc = subprocess.Popen(cmd, cwd=gen_dir, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            running.append((arch, proc, tmp, target, stamp, digest))
        failures = []
        for arch, proc, tmp, target, stamp, digest in running:
            output, _ = proc.communicate()
            if proc.returncode != 0:
                failures.append(f"--- {arch} ---\n{output}")
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                continue
            os.replace(tmp, target)
            _write_text(stamp, digest + "\n")
            if log:
                log(f"built {target}")
        if failures:
            sys.stderr.write("".join(failures))
            raise BuildError(f"compiling {', '.join(a for a, *_ in running)} failed (output above)")
    return results


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def _write_text(path: str, text: str) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="native/build.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="output folder (default: build/native, "
                        "or build/native-sanitize with --sanitize)")
    parser.add_argument("--arch", choices=ARCHES + ("all",), default=None,
                        help="default: all (with --sanitize: this machine's)")
    parser.add_argument("--sanitize", action="store_true",
                        help="this machine's arch, system gcc, -fsanitize=address,undefined")
    parser.add_argument("--cflag", action="append", default=[], metavar="FLAG",
                        help="an extra compiler flag (e.g. -DMOKKA_TRACE_EXPORT_TABLE); repeatable")
    parser.add_argument("--src", default=SRC, help=argparse.SUPPRESS)
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)

    if args.sanitize:
        if args.arch not in (None, host_arch()):
            parser.error(f"--sanitize builds for this machine only ({host_arch()})")
        arches = [host_arch()]
        out = args.out or os.path.join(REPO, "build", "native-sanitize")
    else:
        arches = list(ARCHES) if args.arch in (None, "all") else [args.arch]
        out = args.out or os.path.join(REPO, "build", "native")
    log = None if args.quiet else (lambda msg: print(f"native/build.py: {msg}", file=sys.stderr))
    try:
        build(out, arches, sanitize=args.sanitize, src=args.src,
              extra_cflags=tuple(args.cflag), log=log)
    except BuildError as exc:
        print(f"native/build.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
