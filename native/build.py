"""Build the native libraries of native/: the one build entry.

    python3 native/build.py [--out DIR] [--arch host|all|x86_64|aarch64] [--sanitize] [--lib NAME]...
                            [--quiet]

Writes ``<out>/<arch>/<file>`` for every library of ``LIBRARIES`` (or those
``--lib`` names; default out: build/native in the repo). The architectures: ``--arch``,
else ``$MOKKA_ARCHES``, else this machine's alone (``requested_arches``: ``all`` is
x86_64 and aarch64). Unless ``--quiet``, one line on stderr as each library starts and
finishes ("native: building libnvidia-ml.so.1 (x86_64)..."). The libraries:
the mock ``libnvidia-ml.so.1`` (native/nvml/: rooms engine/, mig/, api/), the mock ``libcuda.so.1``
(native/cuda/), the LD_PRELOAD shims (native/shims/: the path shims share
the interposers and add one map file each; the verbs shim; native/ib/: the
umad shim), the proc hook (native/hooks/) and the driver root's modprobe
(native/driverroot/), both static executables (musl). The compiler
is PyPI's ziglang (``python -m ziglang cc -target <arch>-linux-gnu.2.17``), so
one machine builds for x86_64
and aarch64 against glibc 2.17 with no system toolchain; nvml.h comes from
PyPI's nvidia-nvml-dev-cu12 and cuda.h from nvidia-cuda-runtime-cu12 (pins:
native/requirements.txt; neither header is ever committed). ``--sanitize``
builds for this machine with the system gcc under ASan and UBSan instead
(ziglang ships no ASan runtime), into build/native-sanitize unless --out says
otherwise.

Generated first, into ``<out>/gen``: ``mokka_names.h`` (native/gen_names.py),
for the NVML and CUDA libraries ``mokka_keys.h`` (native/nvml/gen_keys.py: the
state's keys), and for the NVML library ``getters.c`` (native/nvml/gen_getters.py: the one-key getters of
native/nvml/getters.py) and ``stubs.c`` (native/nvml/gen_stubs.py). A build whose
inputs (sources, generated files, headers, flags, compiler version) hash as
before is skipped: the hash is kept beside each library as ``<file>.inputs``.
Reproducible: the same inputs give the same bytes (no paths of this machine in
the output, no timestamps, no build id).
"""

from __future__ import annotations

import argparse
import concurrent.futures
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
import time
import typing

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from mokka.core import names  # noqa: E402  (stdlib only: no install needed)


class Library(typing.NamedTuple):
    """One shared library (its file is also its soname), or with ``program`` one static
    executable (musl, so it runs whatever the host's libc), and what goes into it."""
    file: str
    sources: tuple[str, ...]            # globs relative to native/, in link order
    #: Globals of the linker version script (everything else local), or () for
    #: none: the shims export what they mark visible (MOKKA_EXPORT), unversioned.
    exports: tuple[str, ...] = ()
    nvml: bool = False                  # the generated NVML sources and nvml.h's folder
    cflags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ("-lpthread", "-ldl")
    cuda: bool = False                  # cuda.h's and nvml.h's folders, and mokka_keys.h
    program: bool = False
    #: Folders (relative to native/) searched for quoted includes besides native/ and
    #: each source's own: the NVML library's rooms name each other's headers from nvml/.
    includes: tuple[str, ...] = ()


#: What every path shim links: the libc interposers, the redirect decision and the
#: lexical normal form it decides on, the cached map, the environment reader.
SHIM = ("shims/interpose.c", "shims/rewrite.c", "shims/lexical.c", "shims/map.c", "shims/env.c")

#: The NVML library's rooms (native/nvml/<room>/), lowest first: a room's files include
#: the headers of their own room and the rooms before it, and call nothing of a later
#: one (tests/native/test_rooms.py). The engine reads the state; MIG keeps the
#: partitions; the API is NVML's calls.
NVML_ROOMS = ("engine", "mig", "api")

#: The NVML library's warnings beyond CFLAGS: every function defined outside its file
#: is declared in its room's header first (no prototype of it written where it is called).
NVML_WARNINGS = ("-Wmissing-prototypes", "-Wredundant-decls")

#: The libraries, by the name --lib takes. The shims share native/shims/ (path
#: rewriting and the libc interposers) and add the one file naming their prefixes.
#: Another library: add a row (its sources, its file from names.py).
LIBRARIES: dict[str, Library] = {
    "nvml": Library(names.NVML_LIB_FILE, tuple(f"nvml/{room}/*.c" for room in NVML_ROOMS),
                    exports=("nvml*",), nvml=True, includes=("nvml",),
                    cflags=("-DNVML_NO_UNVERSIONED_FUNC_DEFS", *NVML_WARNINGS,
                            "-include", "nvml/engine/visibility.h")),
    # The driver API over the mock NVML library (dlopened, never linked); -z defs: every
    # entry point cuGetProcAddress names must exist.
    "cuda": Library(names.CUDA_LIB_FILE, ("cuda/*.c",), exports=("cu*",), cuda=True,
                    cflags=("-include", "cuda/api.h"), libs=("-lpthread", "-ldl", "-Wl,-z,defs")),
    # libibumad's calls answered by mock-ib over run/mock-ib.sock (not a path shim).
    "ibmockumad": Library(names.IB_UMAD_LIB_FILE, ("ib/umad.c", "ib/query.c", "ib/transport.c")),
    "ibmockverbs": Library(names.IB_VERBS_LIB_FILE, ("shims/ibverbs.c", "shims/env.c")),
    "ibmocksys": Library(names.IB_SYS_LIB_FILE, SHIM + ("shims/ibsys.c",)),
    "mockfs": Library(names.FS_LIB_FILE, SHIM + ("shims/mockfs.c",)),
    # The OCI hook that gives containers the driver's proc files (the NRI plugin adds it).
    "prochook": Library(names.PROC_HOOK_FILE, ("hooks/*.c",), libs=(), program=True),
    # The driver root's /sbin/modprobe (the GPU Operator validator runs it chrooted there).
    "modprobe": Library(names.MODPROBE_FILE, ("driverroot/*.c",), libs=(), program=True),
}

SRC = os.path.join(HERE, "nvml")
#: What the build generates for the NVML library into <out>/gen: never a source of native/.
NVML_GENERATED_SOURCES = ("getters.c", "stubs.c")
LIBRARY = names.NVML_LIB_FILE
ARCHES = names.NATIVE_ARCHES
GLIBC = "2.17"
PINS = os.path.join(HERE, "requirements.txt")

# What the output may contain instead of this machine's paths.
FIXED_NATIVE = "/mokka/native"
FIXED_GEN = "/mokka/native/gen"

CFLAGS = [
    "-std=c11", "-O2", "-fPIC", "-fvisibility=hidden",
    "-Wall", "-Wextra", "-Werror",
]
SANITIZE_CFLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-g"]


def version_script(lib: Library) -> str:
    return "{\n    global: " + " ".join(f"{e};" for e in lib.exports) + "\n    local: *;\n};\n"


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


def cuda_header() -> str:
    """cuda.h from PyPI's nvidia-cuda-runtime-cu12."""
    try:
        spec = importlib.util.find_spec("nvidia.cuda_runtime")
    except ModuleNotFoundError:
        spec = None
    for base in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(base, "include", "cuda.h")
        if os.path.isfile(path):
            return path
    raise _missing("nvidia-cuda-runtime-cu12", "cuda.h (package nvidia-cuda-runtime-cu12)")


def headers(lib: Library) -> list[str]:
    """The PyPI headers a library compiles against: nvml.h for both mocks, cuda.h for CUDA's."""
    if lib.nvml:
        return [nvml_header()]
    if lib.cuda:
        return [nvml_header(), cuda_header()]
    return []


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


def requested_arches(value: str | None, host: str) -> list[str]:
    """The architectures ``MOKKA_ARCHES`` (or ``--arch``) asks for: unset, empty or
    ``host`` this machine's (``host``), ``all`` every one of ARCHES, or one by name.
    The one rule ./shivfile builds and packs by."""
    value = (value or "").strip() or names.ARCHES_HOST
    if value == names.ARCHES_ALL:
        return list(ARCHES)
    if value == names.ARCHES_HOST:
        if host not in ARCHES:
            raise BuildError(f"this machine is {host}, and the native libraries build for "
                             f"{' and '.join(ARCHES)} only: set {names.ENV_ARCHES} to one of them")
        return [host]
    if value in ARCHES:
        return [value]
    raise BuildError(f"{names.ENV_ARCHES}={value}: use {names.ARCHES_HOST} (the default: this "
                     f"machine's), {names.ARCHES_ALL}, or one of {', '.join(ARCHES)}")


# --------------------------------------------------------------------------- generate


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def sources(lib: Library, native: str = HERE) -> list[str]:
    """The hand-written C files of a library, in table order (each glob sorted)."""
    found: list[str] = []
    for pattern in lib.sources:
        for path in sorted(glob.glob(os.path.join(native, pattern))):
            if path not in found and os.path.basename(path) not in NVML_GENERATED_SOURCES:
                found.append(path)
    return found


def hand_written_sources(src: str = SRC) -> list[str]:
    """The NVML library's C files of every room (what gen_stubs and gen_getters look at)."""
    return sorted(p for room in NVML_ROOMS for p in glob.glob(os.path.join(src, room, "*.c"))
                  if os.path.basename(p) not in NVML_GENERATED_SOURCES)


def _stem(file: str) -> str:
    return file.split(".so", 1)[0]


def generate(gen_dir: str, libs: list[Library], header: str | None) -> None:
    """mokka_names.h, the NVML library's generated files and each version script into gen_dir."""
    os.makedirs(gen_dir, exist_ok=True)
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    names_gen = _load(os.path.join(HERE, "gen_names.py"), "mokka_gen_names")
    stubs = _load(os.path.join(SRC, "gen_stubs.py"), "mokka_gen_stubs")
    write = stubs.write_if_changed        # one writer for every generated file
    write(os.path.join(gen_dir, "mokka_names.h"), names_gen.render())
    for lib in libs:
        if lib.nvml:
            _generate_nvml(gen_dir, header, stubs, write)
        if lib.cuda:
            keys = _load(os.path.join(SRC, "gen_keys.py"), "mokka_gen_keys")
            try:
                write(os.path.join(gen_dir, "mokka_keys.h"), keys.render())
            except ValueError as exc:
                raise BuildError(str(exc)) from None
        if lib.exports:
            write(os.path.join(gen_dir, _stem(lib.file) + ".map"), version_script(lib))


def _generate_nvml(gen_dir: str, header: str, stubs, write) -> None:
    keys = _load(os.path.join(SRC, "gen_keys.py"), "mokka_gen_keys")
    getters = _load(os.path.join(SRC, "gen_getters.py"), "mokka_gen_getters")
    with open(header, encoding="utf-8") as f:
        functions = stubs.parse_header(f.read())
    sources = hand_written_sources(SRC)
    try:
        write(os.path.join(gen_dir, "mokka_keys.h"), keys.render())
        text = getters.render(functions, getters.table(), keys.gpu_macros(), stubs.handwritten(sources))
    except ValueError as exc:             # a table row or a key declaration: one line
        raise BuildError(str(exc)) from None
    write(os.path.join(gen_dir, "getters.c"), text)
    write(os.path.join(gen_dir, "stubs.c"), stubs.render(functions, stubs.defined_elsewhere(sources)))


def generated(lib: Library) -> list[str]:
    out = ["mokka_names.h"]
    if lib.nvml:
        out += ["mokka_keys.h", *NVML_GENERATED_SOURCES]
    if lib.cuda:
        out.append("mokka_keys.h")
    if lib.exports:
        out.append(_stem(lib.file) + ".map")
    return out


# --------------------------------------------------------------------------- compile


def command(lib: Library, arch: str, gen_dir: str, output: str, *,
            sanitize: bool, extra_cflags: tuple[str, ...] = ()) -> list[str]:
    if sanitize:
        cc = ["gcc"]
        flags = CFLAGS + SANITIZE_CFLAGS
    elif lib.program:
        cc = zig_command() + ["-target", f"{arch}-linux-musl"]
        flags = CFLAGS + ["-s"]
    else:
        cc = zig_command() + ["-target", f"{arch}-linux-gnu.{GLIBC}"]
        flags = CFLAGS + ["-s"]     # stripped, as NVIDIA's: the dynamic symbols are the API
    maps = []
    pairs = [(HERE, FIXED_NATIVE), (gen_dir, FIXED_GEN)]
    included = headers(lib)
    for found in included:
        pairs.append((os.path.dirname(found), f"/{os.path.basename(found).split('.')[0]}/include"))
    for real, fixed in pairs:
        maps += [f"-ffile-prefix-map={real}={fixed}", f"-fdebug-prefix-map={real}={fixed}"]
    includes = ["-I", HERE, "-I", gen_dir]
    for folder in lib.includes:
        includes += ["-I", os.path.join(HERE, folder)]
    for path in sources(lib):
        folder = os.path.dirname(path)
        if folder not in includes:
            includes += ["-I", folder]
    for found in included:
        includes += ["-I", os.path.dirname(found)]
    cflags = [os.path.join(HERE, f) if prev == "-include" else f
              for prev, f in zip(("",) + lib.cflags, lib.cflags)]
    if lib.program:
        link = ["-Wl,--build-id=none"] + ([] if sanitize else ["-static"])
    else:
        link = ["-shared", f"-Wl,-soname,{lib.file}", "-Wl,--build-id=none"]
    if lib.exports:
        link.append(f"-Wl,--version-script={os.path.join(gen_dir, _stem(lib.file) + '.map')}")
    srcs = sources(lib) + ([os.path.join(gen_dir, f) for f in NVML_GENERATED_SOURCES] if lib.nvml else [])
    return (cc + flags + cflags + list(extra_cflags) + maps + includes
            + link + srcs + list(lib.libs) + ["-o", output])


def inputs_hash(lib: Library, cmd: list[str], gen_dir: str, version: str) -> str:
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        digest.update(f"{label}\0{len(data)}\0".encode())
        digest.update(data)

    folders = sorted({os.path.dirname(p) for p in sources(lib)} | {os.path.join(HERE, f) for f in lib.includes})
    for folder in folders:      # the sources and every header beside them
        for path in sorted(glob.glob(os.path.join(folder, "*"))):
            if os.path.isfile(path) and os.path.basename(path) not in NVML_GENERATED_SOURCES:
                with open(path, "rb") as f:
                    add(os.path.relpath(path, HERE), f.read())
    for name in generated(lib):
        with open(os.path.join(gen_dir, name), "rb") as f:
            add("gen/" + name, f.read())
    for found in headers(lib):
        with open(found, "rb") as f:
            add(os.path.basename(found), f.read())
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


class _Job(typing.NamedTuple):
    """One compiler run under way: what it makes, and where its result goes."""
    what: str                   # "libnvidia-ml.so.1 (x86_64)", as the progress lines name it
    proc: subprocess.Popen
    started: float
    tmp: str
    target: str
    stamp: str
    digest: str


def build(out: str, arches: list[str], *, libraries: list[str] | None = None,
          sanitize: bool = False, extra_cflags: tuple[str, ...] = (), log=None) -> list[str]:
    """Build (or keep) <out>/<arch>/<file> for each library and arch; return the paths
    (library-major: every arch of the first library, then the next). ``log``, when
    given, gets one short line as each library starts and as it finishes."""
    out = os.path.abspath(out)
    say = log or (lambda _msg: None)
    chosen = list(LIBRARIES) if libraries is None else list(libraries)
    unknown = [n for n in chosen if n not in LIBRARIES]
    if unknown:
        raise BuildError(f"unknown library {', '.join(unknown)} (known: {', '.join(LIBRARIES)})")
    libs = [LIBRARIES[n] for n in chosen]
    header = nvml_header() if any(lib.nvml for lib in libs) else None
    if not sanitize:
        zig_command()
    version = compiler_version(sanitize)
    gen_dir = os.path.join(out, "gen")
    results: list[str] = []
    began = time.monotonic()
    with _locked(os.path.join(out, ".lock")):
        generate(gen_dir, libs, header)
        running: list[_Job] = []
        kept = 0
        for lib in libs:
            for arch in arches:
                what = f"{lib.file} ({arch})"
                target = os.path.join(out, arch, lib.file)
                stamp = target + ".inputs"
                tmp = os.path.join(out, arch, f".{lib.file}.tmp")
                cmd = command(lib, arch, gen_dir, tmp, sanitize=sanitize,
                              extra_cflags=extra_cflags)
                digest = inputs_hash(lib, cmd, gen_dir, version)
                results.append(target)
                if os.path.isfile(target) and _read(stamp) == digest:
                    kept += 1
                    continue
                os.makedirs(os.path.dirname(target), exist_ok=True)
                say(f"building {what}...")
                # A fixed working directory: nothing of the caller's cwd reaches the output.
                proc = subprocess.Popen(cmd, cwd=gen_dir, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
                running.append(_Job(what, proc, time.monotonic(), tmp, target, stamp, digest))
        if kept:
            say(f"{kept} up to date (inputs unchanged)")
        failures = []
        # Reported as each compiler finishes, not in the order they started.
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(running))) as pool:
            waiting = {pool.submit(job.proc.communicate): job for job in running}
            for done in concurrent.futures.as_completed(waiting):
                job = waiting[done]
                output, _ = done.result()
                if job.proc.returncode != 0:
                    failures.append((job.what, f"--- {job.what} ---\n{output}"))
                    say(f"failed {job.what}")
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(job.tmp)
                    continue
                os.replace(job.tmp, job.target)
                _write_text(job.stamp, job.digest + "\n")
                say(f"built {job.what} in {time.monotonic() - job.started:.1f} s")
        if failures:
            sys.stderr.write("".join(text for _, text in failures))
            raise BuildError(f"compiling {', '.join(what for what, _ in failures)} failed (output above)")
    if running:
        say(f"done in {time.monotonic() - began:.1f} s ({', '.join(arches)})")
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


def progress(line: str) -> None:
    """One progress line on stderr, at once (a pipe would otherwise hold it to the end)."""
    print(f"native: {line}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="native/build.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="output folder (default: build/native, "
                        "or build/native-sanitize with --sanitize)")
    parser.add_argument("--arch", choices=ARCHES + (names.ARCHES_ALL, names.ARCHES_HOST), default=None,
                        help=f"default: ${names.ENV_ARCHES}, else {names.ARCHES_HOST} (this "
                        f"machine's); {names.ARCHES_ALL}: {' and '.join(ARCHES)}")
    parser.add_argument("--sanitize", action="store_true",
                        help="this machine's arch, system gcc, -fsanitize=address,undefined")
    parser.add_argument("--cflag", action="append", default=[], metavar="FLAG",
                        help="an extra compiler flag (e.g. -DMOKKA_TRACE_EXPORT_TABLE); repeatable")
    parser.add_argument("--lib", action="append", choices=list(LIBRARIES), metavar="NAME",
                        help=f"build only this library ({', '.join(LIBRARIES)}); repeatable; "
                        "default: all")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress lines (errors are still printed)")
    args = parser.parse_args(argv)

    log = None if args.quiet else progress
    try:
        if args.sanitize:
            if args.arch not in (None, names.ARCHES_HOST, host_arch()):
                parser.error(f"--sanitize builds for this machine only ({host_arch()})")
            arches = [host_arch()]
            out = args.out or os.path.join(REPO, "build", "native-sanitize")
        else:
            arches = requested_arches(args.arch or os.environ.get(names.ENV_ARCHES), host_arch())
            out = args.out or os.path.join(REPO, "build", "native")
            if log and len(arches) < len(ARCHES):
                log(f"for {', '.join(arches)} only ({names.ENV_ARCHES}={names.ARCHES_ALL} "
                    f"builds {' and '.join(ARCHES)})")
        build(out, arches, libraries=args.lib, sanitize=args.sanitize,
              extra_cflags=tuple(args.cflag), log=log)
    except BuildError as exc:
        print(f"native/build.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
