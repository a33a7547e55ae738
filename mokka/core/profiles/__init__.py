"""Built-in GPU profiles (package data), and their catalog: what ``mokka profiles`` lists.

``catalog.json`` holds one row per built-in profile (GPU name, count, memory, driver),
derived from the profile files by ``describe``, so a listing reads one small file
instead of parsing and compiling seven profiles. It is generated, never edited:
``python3 -m mokka.core.profiles --write`` rewrites it, and a test fails when it
differs from what the profiles say.
"""

from __future__ import annotations

import os

CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog.json")
WRITE_COMMAND = "python3 -m mokka.core.profiles --write"


def describe(name: str) -> dict:
    """The catalog row of built-in profile ``name``, from the profile itself."""
    from mokka.core import profile as prof

    p = prof.load(name)
    first = p.devices[0] if p.devices else {}
    total = (first.get("memory") or {}).get("total_bytes") or 0
    return {"name": name, "gpu": first.get("name", ""), "count": p.count,
            "memory_mib": total // (1024 * 1024),
            "driver": str((p.doc.get("system") or {}).get("driver_version", ""))}


def catalog_text() -> str:
    """catalog.json as the profiles say it should read."""
    import json
    from mokka.core import names

    return json.dumps([describe(n) for n in names.BUILTIN_PROFILES], indent=1) + "\n"


def builtin_text(name: str) -> bytes | None:
    """Built-in profile ``name``'s file as shipped, or None for a name that is not one."""
    from importlib import resources
    from mokka.core import names

    if name not in names.BUILTIN_PROFILES:
        return None
    return resources.files(__name__).joinpath(f"{name}.yaml").read_bytes()


def read_catalog() -> list[dict]:
    import json

    with open(CATALOG, "rb") as f:
        return json.loads(f.read())
