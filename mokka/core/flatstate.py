"""The C-friendly companions of Mokka's YAML documents (``X.yaml`` -> ``X.nvml``).

The mock NVML library (``native/nvml``) reads compiled facts, never YAML or
JSON. Each document a process may consult — the staged profile, the runtime
overrides, the ComputeDomain topology — gets a companion beside it, written in
the same step, that the library parses with a line scanner and binary search:

    # mokka-nvml <kind> 1
    digest sha256:<hex of the YAML file's bytes>
    gpu.0.memory.total_bytes 85899345920
    gpu.0.name NVIDIA H100 80GB HBM3
    gpu.0.nvlink_links.len 18
    gpu.0.nvlink_links.0.state active
    ...

One ``<key> <value>`` per line, sorted by key as bytes (C ``strcmp`` order), so
the reader needs no sort. Keys are the dotted paths of the document's scalar
leaves; a list ``L`` adds ``L.len`` and its items ``L.0``, ``L.1``...; ``None``
leaves no line. Values: integers in decimal, booleans ``true``/``false``,
floats by ``repr``, strings as they are with ``\\``, newline and carriage
return escaped as ``\\\\``, ``\\n`` and ``\\r``. The digest line lets the
library refuse a companion that no longer matches its YAML.

Pure: the callers write (``atomic_write``), always together with the YAML.
"""

from __future__ import annotations

from mokka.core import names

FORMAT_VERSION = 1
KIND_STATE = names.STATE_COMPANION_KIND
KIND_OVERRIDES = names.OVERRIDES_COMPANION_KIND
KIND_TOPOLOGY = names.TOPOLOGY_COMPANION_KIND


def companion_path(yaml_path: str) -> str:
    """``…/config.yaml`` -> ``…/config.nvml`` (any suffix after the last dot)."""
    head, dot, _ = yaml_path.rpartition(".")
    slash = yaml_path.rfind("/")
    base = head if dot and len(head) > slash + 1 else yaml_path
    return base + names.NVML_COMPANION_SUFFIX


def _scalar(value) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _walk(prefix: str, value, out: list[tuple[str, str]]) -> None:
    if value is None:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            key = str(key).replace(" ", "_")
            _walk(f"{prefix}.{key}" if prefix else key, item, out)
    elif isinstance(value, (list, tuple)):
        out.append((f"{prefix}.{names.COMPANION_LEN_KEY}", str(len(value))))
        for n, item in enumerate(value):
            _walk(f"{prefix}.{n}", item, out)
    else:
        out.append((prefix, _scalar(value)))


def flatten(doc) -> list[tuple[str, str]]:
    """The (key, value) pairs of a document, sorted by key as UTF-8 bytes."""
    pairs: list[tuple[str, str]] = []
    _walk("", doc, pairs)
    pairs.sort(key=lambda kv: kv[0].encode())
    return pairs


def render(kind: str, digest: str, body) -> bytes:
    lines = [f"# mokka-nvml {kind} {FORMAT_VERSION}", f"digest {digest}"]
    lines += [f"{k} {v}" for k, v in flatten(body) if k != "digest"]
    return ("\n".join(lines) + "\n").encode()


def state_companion(state: dict) -> bytes:
    """The compiled engine state: ``gpu.<n>.…`` per GPU, plus the node-wide blocks."""
    body = {key: value for key, value in state.items() if key not in ("gpus", "profile")}
    body[names.COMPANION_GPU_LIST] = state.get("gpus") or []
    body["profile_source"] = (state.get("profile") or {}).get("source")
    return render(KIND_STATE, (state.get("profile") or {}).get("digest", ""), body)


def overrides_companion(doc: dict | None, yaml_bytes: bytes) -> bytes:
    """The fields of one overrides document (a GPU's, or every GPU's: mokka.smi.overrides)."""
    from mokka.core.profile import digest

    return render(KIND_OVERRIDES, digest(yaml_bytes), doc if isinstance(doc, dict) else {})


def topology_companion(doc: dict, yaml_bytes: bytes) -> bytes:
    """``node.<name>.cluster_uuid`` / ``.clique_id`` / ``.domain`` for every node listed."""
    from mokka.core.compile import normalize_cluster_uuid
    from mokka.core.profile import digest

    nodes = {}
    for domain in doc.get("domains") or []:
        for clique in domain.get("cliques") or []:
            for node in clique.get("nodes") or []:
                nodes[str(node)] = {
                    names.TOPOLOGY_COMPANION_CLUSTER_UUID: normalize_cluster_uuid(domain.get("uuid", "")),
                    names.TOPOLOGY_COMPANION_CLIQUE_ID: int(clique.get("id", 0)),
                    "domain": str(domain.get("name", ""))}
    return render(KIND_TOPOLOGY, digest(yaml_bytes), {names.TOPOLOGY_COMPANION_NODES: nodes})
