"""A small mutation runner: does a test fail when the code it covers is wrong?

    python3 tools/mutation.py                     # every mutant of the default targets
    python3 tools/mutation.py --list              # the mutants, without running anything
    python3 tools/mutation.py --sample 60 --seed 1 --budget 1500 --jobs 2
    python3 tools/mutation.py mokka/core/cdi.py   # one file (its tests come from TARGETS)

Each mutant is one small change to one expression: a comparison operator
(``>`` to ``>=``, ``==`` to ``!=``, ``in`` to ``not in``, ...), ``and`` to
``or``, one sub-condition of an ``and``/``or`` dropped (not a literal default
as in ``x or {}``), an integer constant
plus one, ``True``/``False`` swapped, ``not`` dropped, ``+``/``-`` and
``<<``/``>>`` swapped, ``s.startswith(x)`` to ``s == x``. It is applied to a
private copy of the tree (the work tree is never written), then the file's
unit tests run with ``-x -q`` and a timeout. A failing (or timing-out) run
kills the mutant; a passing one lets it survive, and every survivor is a
behaviour no test pins. Standard library only; not run in CI (it takes
minutes).

Some mutants no test can tell from the code: a buffer one byte larger, a flag of 2
where it is 1, a branch only a race reaches. tools/mutation_equivalent.txt lists each
with the reason; the score is given with them and without them. A listed
mutant still runs, and one that a test kills is reported, since the listing is then
wrong. Survivors are printed in that file's form, to review and paste.

C sources (the mock NVML library, the one engine of what a process sees) are
mutated by tokens, outside comments, strings and preprocessor lines: a
comparison (``<`` to ``<=``, ``==`` to ``!=``, ...), ``&&`` to ``||``, a
decimal constant plus one, ``!`` dropped, a binary ``+``/``-`` swapped. The
library is rebuilt in the copy first; a mutant that does not compile is
stillborn and not counted.
"""

from __future__ import annotations

import argparse
import ast
import functools
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CORE = ["tests/core/test_compile_rules.py", "tests/core/test_compile.py", "tests/core/test_cdi.py",
         "tests/core/test_profile_merge.py", "tests/core/test_profile_errors.py",
         "tests/core/test_mig_profiles.py"]
_CODEC = ["tests/nri/test_codec_rules.py", "tests/nri/test_codec.py", "tests/nri/test_codec_fuzz.py",
          "tests/nri/test_plugin.py"]

#: What a process sees, decided in the library: the corpus and the moving-reading vectors.
_ENGINE = ["tests/native/test_lookup_rules.py", "tests/native/test_engine_corpus.py", "tests/native/test_dynamic.py",
           "tests/native/test_overrides_live.py", "tests/native/test_errors.py",
           "tests/native/test_fabric_state_dir.py"]
#: The companion format, both ends (the C side through the format probe, built from the copy).
_FORMAT = ["tests/native/test_flat_format.py", "tests/core/test_flatstate.py"]
#: Which GPUs our nvidia-smi shows, and how it names refused ones, against NVIDIA's.
_SMI = ["tests/smi/test_list_and_csv.py", "tests/native/test_nvidia_smi_agree.py", "-k",
        "not corpus_state"]

#: Source file -> the unit tests that cover it, fastest first (-x stops at the first failure).
TARGETS = {
    "mokka/core/compile.py": _CORE,
    "mokka/core/cdi.py": ["tests/core/test_cdi.py"],
    "mokka/nri/codec/conn.py": _CODEC,
    "mokka/nri/codec/mux.py": _CODEC,
    "mokka/nri/codec/ttrpc.py": _CODEC,
    "native/nvml/engine/node.c": _ENGINE + ["tests/native/test_hostile_files.py"],
    "native/nvml/engine/lookup.c": _ENGINE,
    "native/nvml/engine/dynamic.c": _ENGINE + ["tests/native/test_hostile_files.py"],
    "native/nvml/engine/overrides.c": _ENGINE + ["tests/native/test_hostile_files.py"],
    "native/nvml/engine/flat.c": _FORMAT + ["tests/native/test_lookup_rules.py", "tests/native/test_errors.py"],
    "native/nvml/engine/kinds.c": _FORMAT,
    "mokka/engine/flatstate.py": _FORMAT,
    "mokka/smi/devices.py": _SMI,
}

_COMPARE_SWAPS = {
    ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Lt: ast.LtE, ast.LtE: ast.Lt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}
_BINOP_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.LShift: ast.RShift, ast.RShift: ast.LShift}
_SYMBOL = {
    ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.And: "and",
    ast.Or: "or", ast.Add: "+", ast.Sub: "-", ast.LShift: "<<", ast.RShift: ">>",
}


@dataclass(frozen=True)
class Mutant:
    path: str          # relative to ROOT
    line: int
    col: int
    what: str          # "'>' -> '>='"
    source: str        # the mutated file's full text

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}:{self.col + 1}"


EQUIVALENT_FILE = os.path.join(ROOT, "tools", "mutation_equivalent.txt")


@functools.lru_cache(maxsize=None)
def _source_lines(path: str) -> tuple[str, ...]:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return tuple(f.read().split("\n"))


def signature(m: Mutant) -> str:
    """The mutant as mutation_equivalent.txt names it: file | line text | column in it | change."""
    line = _source_lines(m.path)[m.line - 1]
    indent = len(line) - len(line.lstrip())
    return f"{m.path} | {line.strip()} | {m.col - indent} | {m.what}"


def equivalents(path: str = EQUIVALENT_FILE) -> dict[str, str]:
    """signature -> why no test can kill it."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for raw in f:
            if raw.strip() and not raw.startswith("#"):
                *fields, why = [x.strip() for x in raw.rstrip("\n").split(" | ")]
                out[" | ".join(fields)] = why
    return out


# --- finding mutants -------------------------------------------------------------

def _sites(tree: ast.AST):
    """(node, description, replacement node) for every mutation of every expression."""
    in_fstring = {id(n) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr)
                  for n in ast.walk(j)}
    for node in ast.walk(tree):
        if id(node) in in_fstring or not hasattr(node, "end_col_offset"):
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                swap = _COMPARE_SWAPS.get(type(op))
                if swap is not None:
                    ops = list(node.ops)
                    ops[i] = swap()
                    yield node, f"'{_SYMBOL[type(op)]}' -> '{_SYMBOL[swap]}'", \
                        ast.Compare(node.left, ops, node.comparators)
        elif isinstance(node, ast.BoolOp):
            other = ast.Or if isinstance(node.op, ast.And) else ast.And
            yield node, f"'{_SYMBOL[type(node.op)]}' -> '{_SYMBOL[other]}'", \
                ast.BoolOp(other(), node.values)
            for i, value in enumerate(node.values):
                if isinstance(value, (ast.Constant, ast.Dict, ast.List, ast.Tuple, ast.Set)):
                    continue                  # "x or {}": a default, not a condition
                rest = node.values[:i] + node.values[i + 1:]
                kept = rest[0] if len(rest) == 1 else ast.BoolOp(node.op, rest)
                yield node, f"drop sub-condition {ast.unparse(value)!r}", kept
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                yield node, f"{node.value} -> {not node.value}", ast.Constant(not node.value)
            elif isinstance(node.value, int):
                yield node, f"{node.value} -> {node.value + 1}", ast.Constant(node.value + 1)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, f"drop 'not' in {ast.unparse(node)!r}", node.operand
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAPS:
            swap = _BINOP_SWAPS[type(node.op)]
            yield node, f"'{_SYMBOL[type(node.op)]}' -> '{_SYMBOL[swap]}'", \
                ast.BinOp(node.left, swap(), node.right)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith") and len(node.args) == 1
              and not node.keywords and not isinstance(node.args[0], ast.Tuple)):
            yield node, f"{node.func.attr} -> '=='", \
                ast.Compare(node.func.value, [ast.Eq()], [node.args[0]])


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def _replace(text: str, node: ast.AST, new: ast.AST) -> str:
    """``text`` with the span of ``node`` replaced by ``new``, parenthesized."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    data = text.encode()
    start = offsets[node.lineno - 1] + node.col_offset            # col offsets are in bytes
    end = offsets[node.end_lineno - 1] + node.end_col_offset
    return (data[:start] + f"({ast.unparse(new)})".encode() + data[end:]).decode()


#: Token swaps of C code; longest first, so '<=' is never read as '<'.
_C_SWAPS = {"<=": "<", ">=": ">", "==": "!=", "!=": "==", "&&": "||", "||": "&&", "<": "<=", ">": ">="}
_C_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|/\*.*?\*/|//[^\n]*|^[ \t]*#[^\n]*'
                      r"|<<=?|>>=?|->|\+\+|--|<=|>=|==|!=|&&|\|\||[<>!+-]|\b\d+[uUlL]*\b|\w+|\S",
                      re.S | re.M)


def c_mutants_of(path: str, text: str) -> list[Mutant]:
    """Token mutants of a C source (see the module's docstring)."""
    out = []
    tokens = [(m.start(), m.group()) for m in _C_TOKEN.finditer(text)]
    for i, (at, tok) in enumerate(tokens):
        prev = tokens[i - 1][1] if i else ""
        new = None
        if tok in _C_SWAPS and not (tok in "<>" and prev == "#include"):
            new = _C_SWAPS[tok]
        elif tok == "!" and i + 1 < len(tokens) and (tokens[i + 1][1] == "(" or tokens[i + 1][1][0].isalpha()):
            new = ""
        elif tok in "+-" and (prev[:1].isalnum() or prev in (")", "]")) and text[at - 1:at] == " ":
            new = "-" if tok == "+" else "+"
        elif tok == "1" and prev == "return" and tokens[i + 1][1] == ";" if i + 1 < len(tokens) else False:
            continue                      # "return 1;" -> 2: the same truth to every caller
        elif tok[0].isdigit() and tok.rstrip("uUlL").isdigit():
            digits = tok.rstrip("uUlL")
            new = str(int(digits) + 1) + tok[len(digits):]
        if new is None:
            continue
        line = text.count("\n", 0, at) + 1
        col = at - (text.rfind("\n", 0, at) + 1)
        what = f"'{tok}' -> '{new}'" if new else f"drop '{tok}'"
        out.append(Mutant(path, line, col, what, text[:at] + new + text[at + len(tok):]))
    return out


def mutants_of(path: str) -> list[Mutant]:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".c"):
        return c_mutants_of(path, text)
    tree = ast.parse(text)
    skip = _docstring_lines(tree)
    out, seen = [], set()
    for node, what, new in _sites(tree):
        if node.lineno in skip:
            continue
        source = _replace(text, node, new)
        try:
            compile(source, path, "exec")
        except SyntaxError:
            continue
        if source in seen:
            continue
        seen.add(source)
        out.append(Mutant(path, node.lineno, node.col_offset, what, source))
    out.sort(key=lambda m: (m.path, m.line, m.col, m.what))
    return out


# --- running them ----------------------------------------------------------------

def _copy_tree(dest: str) -> None:
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", "dist", "build", ".venv",
        ".mutation-tmp"))


def _build_out(tree: str) -> str:
    return os.path.join(tree, "build", "native")


def _build_library(tree: str) -> str | None:
    """Rebuild the copy's mock NVML library for this machine (where its tests load it);
    None when it built, else the end of the build's output."""
    done = subprocess.run([sys.executable, os.path.join(tree, "native", "build.py"), "-q", "--lib", "nvml",
                           "--arch", os.uname().machine, "--out", _build_out(tree)],
                          cwd=tree, capture_output=True, text=True)
    return None if done.returncode == 0 else (done.stdout + done.stderr)[-3000:]


def run_env(tree: str, caller: dict) -> dict:
    """The environment of a test run in ``tree``: its own sources and its own library build.

    A caller's MOKKA_NATIVE_DIR (the usual way to reuse prebuilt libraries) would point the
    native tests at the unmutated work tree's build, and every C mutant would survive."""
    env = {k: v for k, v in caller.items() if not k.startswith(("MOKKA_NVML_", "MOKKA_NATIVE_"))}
    env.update(PYTHONPATH=tree, PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
               MOKKA_NATIVE_DIR=os.path.join(_build_out(tree), os.uname().machine))
    return env


def _pytest(tree: str, tests: list[str], timeout: float, native: bool = False,
            log: str | None = None) -> tuple[str, float]:
    """'passed', 'failed', 'timeout' or (native: the library does not build) 'stillborn',
    and the seconds taken; ``log``: a file for pytest's output (else it is dropped)."""
    if native and _build_library(tree) is not None:
        return "stillborn", 0.0
    env = run_env(tree, os.environ)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "--basetemp", os.path.join(tree, ".mutation-tmp"), *tests]
    start = time.monotonic()
    with open(log or os.devnull, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)       # the run we started, and its children
            proc.wait()
            return "timeout", time.monotonic() - start
    return ("passed" if code == 0 else "failed"), time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help=f"source files (default: {', '.join(TARGETS)})")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--sample", type=int, default=0, help="run only N mutants, chosen at random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--timeout", type=float, default=0,
                    help="seconds per mutant (default: 10x the file's clean run, at least 60)")
    ap.add_argument("--budget", type=float, default=0,
                    help="stop starting mutants after this many seconds (0: no limit)")
    args = ap.parse_args(argv)

    files = args.files or list(TARGETS)
    for f in files:
        if f not in TARGETS:
            ap.error(f"{f}: no tests are mapped to it in TARGETS")
    mutants = [m for f in files for m in mutants_of(f)]
    total = len(mutants)
    named = {}
    for m in mutants:
        named.setdefault(signature(m), []).append(m)
    for sig in equivalents():
        if len(named.get(sig, ())) > 1 and sig.split(" | ")[0] in files:
            print(f"note: {os.path.basename(EQUIVALENT_FILE)} names {len(named[sig])} mutants (each must be one "
                  f"no test can tell): {sig}")
    if args.list:
        for m in mutants:
            print(f"{m.where}: {m.what}")
        print(f"{total} mutants")
        return 0
    rng = random.Random(args.seed)
    if args.sample and args.sample < total:
        mutants = rng.sample(mutants, args.sample)
    # Run in a random order, so a budget that runs out leaves a fair sample of every file.
    order = rng.sample(mutants, len(mutants))
    mutants.sort(key=lambda m: (m.path, m.line, m.col, m.what))
    print(f"{len(mutants)} of {total} mutants over {len(files)} files, {args.jobs} jobs", flush=True)

    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="mokka-mutation-")
    trees = [os.path.join(work, f"tree{i}") for i in range(max(args.jobs, 1))]
    for t in trees:
        _copy_tree(t)
    try:
        # Baselines: every file's tests must pass on the unmutated copy.
        timeouts = {}
        for t in trees:
            failed = _build_library(t) if any(f.endswith(".c") for f in files) else None
            if failed is not None:
                print(f"{failed}\nbaseline: the mock NVML library does not build; stopping")
                return 2
        for f in files:
            log = os.path.join(work, "baseline.log")
            result, took = _pytest(trees[0], TARGETS[f], timeout=600, log=log)
            if result != "passed":
                with open(log, encoding="utf-8", errors="replace") as out:
                    tail = out.read()[-3000:]
                print(f"{tail}\nbaseline: the tests of {f} do not pass unmutated ({result}); stopping")
                return 2
            timeouts[f] = args.timeout or max(60.0, 10 * took)
            print(f"baseline {f}: passed in {took:.1f}s", flush=True)

        free = list(trees)
        mu = threading.Lock()
        stopping = threading.Event()
        results: dict[Mutant, str] = {}

        def run(m: Mutant) -> None:
            if stopping.is_set() or (args.budget and time.monotonic() - started > args.budget):
                return
            with mu:
                tree = free.pop()
            target = os.path.join(tree, m.path)
            with open(os.path.join(ROOT, m.path), encoding="utf-8") as f:
                original = f.read()
            try:
                with open(target, "w", encoding="utf-8") as f:
                    f.write(m.source)
                result, took = _pytest(tree, TARGETS[m.path], timeouts[m.path], native=m.path.endswith(".c"))
            finally:
                with open(target, "w", encoding="utf-8") as f:
                    f.write(original)
                if m.path.endswith(".c"):
                    _build_library(tree)          # the next mutant in this copy starts clean
                with mu:
                    free.append(tree)
            verdict = {"passed": "SURVIVED", "stillborn": "stillborn"}.get(result) or "killed" + (
                " (timeout)" if result == "timeout" else "")
            with mu:
                results[m] = verdict
                print(f"[{len(results)}/{len(mutants)}] {verdict:17} {m.where}: {m.what} "
                      f"({took:.1f}s)", flush=True)

        with ThreadPoolExecutor(max_workers=len(trees)) as pool:
            try:
                list(pool.map(run, order))
            except KeyboardInterrupt:
                stopping.set()                # let the running mutants finish; start no more
                print("interrupted: reporting what ran", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    killed = sum(1 for v in results.values() if v.startswith("killed"))
    survivors = [m for m in mutants if results.get(m) == "SURVIVED"]
    stillborn = sum(1 for v in results.values() if v == "stillborn")
    not_run = len(mutants) - len(results)
    ran = killed + len(survivors)
    listed = equivalents()
    equivalent = [m for m in survivors if signature(m) in listed]
    wrongly_listed = [m for m in mutants if results.get(m, "").startswith("killed") and signature(m) in listed]
    score = 100.0 * killed / ran if ran else 0.0
    counted = ran - len(equivalent)
    print()
    print(f"killed {killed}, survived {len(survivors)}, score {score:.1f}% "
          f"({ran} run of {total} mutants"
          + (f", sampled with seed {args.seed}" if args.sample and args.sample < total else "")
          + (f", {not_run} not run: budget spent or interrupted" if not_run else "")
          + (f", {stillborn} stillborn: did not compile" if stillborn else "")
          + f"; {time.monotonic() - started:.0f}s)")
    print(f"without the {len(equivalent)} survivors listed in tools/mutation_equivalent.txt: score "
          f"{100.0 * killed / counted if counted else 0.0:.1f}% ({killed} of {counted})")
    for m in wrongly_listed:
        print(f"listed as equivalent but killed (take it out of the list): {signature(m)}")
    others = [m for m in survivors if m not in equivalent]
    if others:
        print("survivors not listed as equivalent (file | line | column | change):")
        for m in others:
            print(f"  {signature(m)}    [{m.where}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
