"""How many of a list's NVML functions the mock library answers, counted from its sources.

    python tools/nvml_coverage.py LIST [--no-vgpu] [--root CHECKOUT] [--stubbed]

LIST holds one nvml.h function name a line (blank lines and # comments skipped), e.g. the
functions a consumer such as DCGM calls. A name the library stubs (native/nvml/gen_stubs.py:
nvml.h's functions nothing defines) answers NOT_SUPPORTED after nvmlInit on every board; every
other name has a definition, which may still refuse a board that lacks the feature, as the
real driver does. --no-vgpu leaves out the vGPU calls (a name with "vgpu" in it); --root
counts another checkout's sources (say, main's, for a before and after); --stubbed lists the
stubbed names. Names nvml.h does not declare are counted apart.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _module(root: str, relative: str, name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, relative))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module               # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def read_list(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        names = [line.split("#", 1)[0].strip() for line in f]
    return sorted({n for n in names if n})


def coverage(names: list[str], root: str = ROOT) -> tuple[list[str], list[str], list[str]]:
    """(answered, stubbed, unknown to nvml.h) of ``names`` for the checkout at ``root``."""
    build = _module(root, "native/build.py", "mokka_coverage_build")
    stubs = _module(root, "native/nvml/gen_stubs.py", "mokka_coverage_stubs")
    with open(build.nvml_header(), encoding="utf-8") as f:
        declared = stubs.parse_header(f.read())
    defined = stubs.defined_elsewhere(build.hand_written_sources(os.path.join(root, "native", "nvml")))
    unknown = [n for n in names if n not in declared]
    known = [n for n in names if n in declared]
    return [n for n in known if n in defined], [n for n in known if n not in defined], unknown


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="nvml_coverage.py", description=__doc__.splitlines()[0])
    parser.add_argument("list", help="a file of NVML function names, one a line")
    parser.add_argument("--no-vgpu", action="store_true", help="leave out the vGPU calls")
    parser.add_argument("--root", default=ROOT, help="the checkout whose sources to count (default: this one)")
    parser.add_argument("--stubbed", action="store_true", help="list the names answered NOT_SUPPORTED")
    args = parser.parse_args(argv)
    try:
        names = read_list(args.list)
    except (OSError, UnicodeDecodeError) as e:
        parser.error(f"cannot read {args.list}: {e.strerror if isinstance(e, OSError) else e}; "
                     "give a text file of NVML function names")
    if not os.path.isfile(os.path.join(args.root, "native", "nvml", "gen_stubs.py")):
        parser.error(f"--root {args.root}: no native/nvml/gen_stubs.py there; give a Mokka checkout")
    if args.no_vgpu:
        names = [n for n in names if "vgpu" not in n.lower()]
    answered, stubbed, unknown = coverage(names, args.root)
    total = len(answered) + len(stubbed)
    share = 100 * len(answered) / total if total else 0.0
    print(f"{len(answered)} of {total} answer ({share:.0f} %); {len(stubbed)} stubbed NOT_SUPPORTED"
          + (f"; {len(unknown)} not in nvml.h" if unknown else ""))
    if args.stubbed:
        print("\n".join(stubbed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
