"""The shims' entry points as staged in the overlay.

Containers run ``driver/usr/bin/nvidia-smi`` and ``check-fabric`` many times a
minute, so they must not pay the zipapp's bootstrap. The node agent stages an
unpacked copy of the pure-Python code they need (Mokka's package and PyYAML's
pure-Python fallback) under ``driver/usr/lib/mokka`` with byte-compiled
``__pycache__``, and a small ``/bin/sh`` launcher per command that runs it with
``python3 -S -B`` (no site import; no bytecode written into the overlay, which
is read-only in containers and must stay as staged on the host). The launcher finds the library at
``../lib/mokka`` from its own directory, which holds both in the overlay and
where the CDI spec mounts the pair at ``/usr/bin`` and ``/usr/lib/mokka``.
"""

from __future__ import annotations

import os
import importlib.util
import marshal

from mokka.core import names
from mokka.core.fsutil import atomic_write

#: Commands staged as launchers in driver/usr/bin.
SHIM_COMMANDS = (names.NVIDIA_SMI, "check-fabric", "nvml-mock-ctl")
#: Subpackages a shim never needs (protobuf, daemons).
_SKIP_DIRS = {"nri", "agent", "__pycache__"}
MIN_PYTHON = (3, 9)

LAUNCHER = """#!/bin/sh
# Mokka {command}: runs the mock from the library staged beside this file.
lib="$(dirname "$0")/../lib/mokka"
py="$(command -v python3 || true)"
if [ -z "$py" ]; then
  echo "{command}: this mock needs python3 ({need}+) in the container image; none is on PATH" >&2
  exit 127
fi
exec "$py" -S -B -c 'import sys
if sys.version_info < {need_tuple}:
    sys.stderr.write("{command}: this mock needs python3 {need}+, found %d.%d\\n" % sys.version_info[:2])
    raise SystemExit(127)
sys.path.insert(0, sys.argv[1])
from mokka.cmd.main import main
sys.argv = sys.argv[2:]
raise SystemExit(main())' "$lib" "$0" "$@"
"""


def launcher_script(command: str) -> str:
    need = ".".join(map(str, MIN_PYTHON))
    return LAUNCHER.format(command=command, need=need, need_tuple=repr(MIN_PYTHON))


def package_files() -> list[tuple[str, str]]:
    """(relative destination, source file) of everything the shims import."""
    import mokka
    files = []
    roots = [(os.path.dirname(mokka.__file__), "mokka")]
    try:
        import yaml
        roots.append((os.path.dirname(yaml.__file__), "yaml"))
    except ImportError:          # without yaml the fallback compile path is unavailable
        pass
    for src_root, dest_root in roots:
        for dirpath, dirnames, filenames in os.walk(src_root):
            rel_dir = os.path.relpath(dirpath, src_root)
            dirnames[:] = sorted(d for d in dirnames
                                 if not (dest_root == "mokka" and rel_dir == "." and d in _SKIP_DIRS)
                                 and d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith((".py", ".yaml", ".json")):
                    files.append((os.path.normpath(os.path.join(dest_root, rel_dir, name)),
                                  os.path.join(dirpath, name)))
    return files


def stage(overlay_root: str, commands: tuple[str, ...] = SHIM_COMMANDS) -> list[str]:
    """Write the library and the launchers of ``commands`` under an overlay root;
    return the paths written."""
    lib = os.path.join(overlay_root, names.DRIVER_PYLIB_DIR)
    bin_dir = os.path.join(overlay_root, names.DRIVER_BIN_DIR)
    written = []
    for rel, src in package_files():
        dest = os.path.join(lib, rel)
        with open(src, "rb") as f:
            data = f.read()
        if atomic_write(dest, data, 0o644, sync=False) or not os.path.exists(_pyc_path(dest)):
            if dest.endswith(".py"):
                _write_pyc(dest, data)
        written.append(dest)
    for command in commands:
        path = os.path.join(bin_dir, command)
        atomic_write(path, launcher_script(command), 0o755, sync=False)
        written.append(path)
    return written


def _write_pyc(source_path: str, source: bytes) -> None:
    """A timestamp pyc for the staged source, written like every other file.

    It matches the staged source, so a container's python3 of the same version
    never recompiles (the mount is read-only). py_compile is not used: it writes
    through a temp name of its own, which a kill -9 would leave behind.
    """
    st = os.stat(source_path)
    code = compile(source, source_path, "exec", dont_inherit=True)
    header = (importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
              + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
              + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    atomic_write(_pyc_path(source_path), header + marshal.dumps(code), 0o644, sync=False)


def _pyc_path(source: str) -> str:
    return importlib.util.cache_from_source(source) if source.endswith(".py") else source
