"""The native libraries the tests load: one place that builds or finds them.

By default they are built for this machine into the checkout's ``build/native`` (where
``./shivfile`` builds them too), and ``native/build.py`` keeps a library that is up to
date, so a second test run builds nothing. ``MOKKA_NATIVE_DIR`` names a folder of
prebuilt libraries instead (an ``<out>/<arch>`` folder of ``native/build.py``, e.g. the
sanitizer build the ``*_sanitized`` tests rerun others over): a set of libraries that
folder holds is taken from it; a set it does not hold is built as by default.
"""

from __future__ import annotations

import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREBUILT_ENV = "MOKKA_NATIVE_DIR"


def build_module():
    """native/build.py, loaded as a module (it is a script, not a package)."""
    name = "mokka_native_build"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "native", "build.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class NativeLibs:
    """``folder(*libraries)``: a folder holding every named library (native/build.py's
    names: ``nvml``, ``cuda``, ``ibmockumad``, ...); ``path(library)``: one library's file."""

    def __init__(self, out: str | None = None):
        self._out = out or os.path.join(REPO, "build", "native")
        self._ready: dict[tuple[str, ...], str] = {}

    def folder(self, *libraries: str) -> str:
        key = tuple(sorted(libraries))
        if key not in self._ready:
            self._ready[key] = self._prebuilt(key) or self._build(key)
        return self._ready[key]

    def path(self, library: str) -> str:
        return os.path.join(self.folder(library), build_module().LIBRARIES[library].file)

    @staticmethod
    def _prebuilt(libraries: tuple[str, ...]) -> str | None:
        folder = os.environ.get(PREBUILT_ENV)
        if not folder:
            return None
        table = build_module().LIBRARIES
        if all(os.path.isfile(os.path.join(folder, table[n].file)) for n in libraries):
            return folder
        return None

    def build(self, *libraries: str) -> str:
        """Build (or keep, when up to date) ``libraries`` into this checkout's folder."""
        return self._build(tuple(libraries))

    def _build(self, libraries: tuple[str, ...]) -> str:
        build = build_module()
        paths = build.build(self._out, [build.host_arch()], libraries=list(libraries))
        return os.path.dirname(paths[0])
