"""Stand-in ``docker``, ``kind``, ``kubectl`` and ``helm`` for running the demo's run.sh.

One program under four names (it dispatches on its own file name). Every call
appends one JSON line to ``$STANDIN_LOG``: the tool, its argv, and for helm the
text of every ``-f`` file as it was when helm read it (run.sh may write some in a
temporary folder it removes). It answers what run.sh asks, from small files in
``$STANDIN_STATE``:

- ``clusters``: the kind clusters that exist, one a line (create/delete edit it);
- ``releases``: helm releases as ``namespace/name`` lines (upgrade --install adds);
- ``namespaces``: namespaces beyond ``default`` and ``kube-system`` (create adds);
- ``nodes``: when present, what ``kubectl get nodes -o name`` prints (else a
  control plane and four workers named as kind names them);
- ``$STANDIN_FAIL``: a regular expression; a call whose argv, joined by spaces,
  matches it exits 1.
"""

from __future__ import annotations

import json
import os
import re
import sys

WORKERS = ("worker", "worker2", "worker3", "worker4")


def _state(name: str) -> str:
    return os.path.join(os.environ["STANDIN_STATE"], name)


def _lines(name: str) -> list[str]:
    try:
        with open(_state(name)) as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def _write_lines(name: str, lines: list[str]) -> None:
    with open(_state(name), "w") as f:
        f.write("".join(line + "\n" for line in lines))


def _opt(argv: list[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
    return None


#: kubectl options run.sh passes with a separate value.
_VALUE_FLAGS = {"--context", "-n", "--namespace", "-o", "-l", "-f"}


def _words(argv: list[str]) -> list[str]:
    """The positional words of a kubectl call (verb, resource, name)."""
    words, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUE_FLAGS:
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    return words


def _kind(argv: list[str]) -> int:
    name = _opt(argv, "--name") or "kind"
    if argv[:2] == ["get", "clusters"]:
        clusters = _lines("clusters")
        if not clusters:
            print("No kind clusters found.", file=sys.stderr)
        for c in clusters:
            print(c)
    elif argv[:2] == ["create", "cluster"]:
        _write_lines("clusters", _lines("clusters") + [name])
    elif argv[:2] == ["delete", "cluster"]:
        _write_lines("clusters", [c for c in _lines("clusters") if c != name])
    return 0


def _kubectl(argv: list[str]) -> int:
    context = _opt(argv, "--context") or ""
    cluster = context.removeprefix("kind-")
    words = _words(argv)
    if "get" in words and "nodes" in words:
        if os.path.exists(_state("nodes")):
            print("\n".join(_lines("nodes")))
            return 0
        print(f"node/{cluster}-control-plane")
        for w in WORKERS:
            print(f"node/{cluster}-{w}")
    elif words[:2] == ["get", "namespace"]:
        return 0 if words[2] in ("default", "kube-system", *_lines("namespaces")) else 1
    elif words[:2] == ["create", "namespace"]:
        _write_lines("namespaces", _lines("namespaces") + [words[2]])
    elif "get" in words and "daemonset" in words and "gpu-agent" in words:
        sys.stdout.write(str(len(WORKERS)))
    elif "--dry-run=client" in argv:
        print("apiVersion: v1\nkind: Stand-in\n")
    elif "apply" in words and _opt(argv, "-f") == "-":
        sys.stdin.read()
    elif "logs" in words:
        print("gpu-agent: OK node=stand-in")
    return 0


def _helm(argv: list[str]) -> int:
    if argv and argv[0] == "status":
        key = f"{_opt(argv, '--namespace')}/{argv[1]}"
        return 0 if key in _lines("releases") else 1
    if argv[:2] == ["upgrade", "--install"]:
        _write_lines("releases", _lines("releases") + [f"{_opt(argv, '--namespace')}/{argv[2]}"])
    return 0


TOOLS = {"kind": _kind, "kubectl": _kubectl, "helm": _helm, "docker": lambda argv: 0}


def main() -> int:
    tool = os.path.basename(sys.argv[0])
    argv = sys.argv[1:]
    record = {"tool": tool, "argv": argv}
    if tool == "helm":
        record["files"] = {}
        for i, arg in enumerate(argv[:-1]):
            if arg == "-f":
                with open(argv[i + 1]) as f:
                    record["files"][argv[i + 1]] = f.read()
    with open(os.environ["STANDIN_LOG"], "a") as log:
        log.write(json.dumps(record) + "\n")
    fail = os.environ.get("STANDIN_FAIL")
    if fail and re.search(fail, " ".join([tool, *argv])):
        print(f"{tool}: stand-in failure", file=sys.stderr)
        return 1
    return TOOLS[tool](argv)


if __name__ == "__main__":
    sys.exit(main())
