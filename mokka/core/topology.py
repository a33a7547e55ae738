"""The ComputeDomain topology document (facts §3), pure.

``version: 1`` with ``domains[]`` of ``{name, uuid, cliques: [{id, nodes: []}]}``.
``apply`` rewrites each GPU's fabric cluster UUID and clique id for one node;
profiles without a fabric block are left unchanged.
"""

from __future__ import annotations

from mokka.core import names


class TopologyError(ValueError):
    pass


def validate(doc, where: str = "topology") -> dict:
    if not isinstance(doc, dict):
        raise TopologyError(f"{where}: the document must be a mapping")
    domains = doc.get("domains") or []
    if not isinstance(domains, list):
        raise TopologyError(f"{where}: domains: must be a list")
    seen: dict[str, str] = {}
    for d, domain in enumerate(domains):
        if not isinstance(domain, dict):
            raise TopologyError(f"{where}: domains[{d}]: must be a mapping")
        for key in ("name", "uuid"):
            if isinstance(domain.get(key), (dict, list)) or not str(domain.get(key, "")).isprintable():
                raise TopologyError(f"{where}: domains[{d}].{key}: must be a plain string")
        cliques = domain.get("cliques") or []
        if not isinstance(cliques, list):
            raise TopologyError(f"{where}: domains[{d}].cliques: must be a list")
        for c, clique in enumerate(cliques):
            if not isinstance(clique, dict):
                raise TopologyError(f"{where}: domains[{d}].cliques[{c}]: must be a mapping")
            cid = clique.get("id", 0)
            if isinstance(cid, bool) or not isinstance(cid, int) or not 0 <= cid < 2**32:
                raise TopologyError(f"{where}: domains[{d}].cliques[{c}].id: must be a uint32")
            nodes = clique.get("nodes") or []
            here = f"domains[{d}].cliques[{c}]"
            if not isinstance(nodes, list):
                raise TopologyError(f"{where}: {here}.nodes: must be a list of node names")
            for node in nodes:
                if not isinstance(node, str) or not node.isprintable() or " " in node:
                    # node names key the companion's lines: one token, no control characters
                    raise TopologyError(f"{where}: {here}.nodes: {node!r} is not a node name")
                if node in seen:
                    raise TopologyError(f"{where}: {here}.nodes: node {node!r} is also in {seen[node]}")
                seen[str(node)] = here
    return doc


def lookup(doc: dict, node_name: str) -> tuple[str, int, str] | None:
    """(cluster uuid, clique id, domain name) of a node, or None."""
    for domain in doc.get("domains") or []:
        for clique in domain.get("cliques") or []:
            if node_name in (clique.get("nodes") or []):
                return str(domain.get("uuid", "")), int(clique.get("id", 0)), str(domain.get("name", ""))
    return None


def apply(state: dict, doc: dict, node_name: str) -> bool:
    """Rewrite fabric identity in a compiled state in place; True if it changed."""
    from mokka.core.compile import normalize_cluster_uuid

    found = lookup(doc, node_name) if node_name else None
    if found is None:
        return False
    uuid, clique, domain = found
    changed = False
    for gpu in state.get("gpus", []):
        fabric = gpu.get("fabric")
        if not fabric:
            continue                      # the profile gates it: no fabric, no rewrite
        fabric["cluster_uuid"] = normalize_cluster_uuid(uuid)
        fabric["clique_id"] = clique
        if not fabric.get("state"):
            fabric["state"] = names.FABRIC_STATE_COMPLETED
        changed = True
    if changed:
        state["topology"] = {"node_name": node_name, "domain": domain,
                             "cluster_uuid": normalize_cluster_uuid(uuid), "clique_id": clique}
    return changed
